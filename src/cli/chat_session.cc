#include "cli/chat_session.h"

#include <algorithm>
#include <fstream>

#include "cli/draft_flags.h"
#include "cli/sampling_flags.h"

namespace zinc::cli {

Result<std::unique_ptr<ChatSession>> ChatSession::create(const std::string& model_path,
                                                         const ChatSessionOptions& options) {
  std::unique_ptr<ChatSession> s(new ChatSession());
  s->model_path_ = model_path;
  s->options_ = options;
  ZINC_ASSIGN_OR_RETURN(s->model_, model::Model::load(model_path));
  const gguf::File& file = s->model_->file();
  auto tok = tokenizer::Tokenizer::load(file);
  if (!tok.ok()) return tok.status().with_context(model_path);
  s->tokenizer_ = std::move(*tok);
  const tokenizer::Vocab& vocab = s->tokenizer_->vocab();

  auto format = chat::ChatFormat::create(file, *s->tokenizer_);
  if (!format.ok()) return format.status().with_context(model_path);
  s->format_ = std::make_unique<chat::ChatFormat>(std::move(*format));

  s->stop_tokens_ = vocab.eog_ids();
  if (s->stop_tokens_.empty() && vocab.valid_id(s->tokenizer_->eos())) s->stop_tokens_ = {s->tokenizer_->eos()};

  engine::RunnerOptions ro;
  ro.backend = options.backend;
  ro.device = options.device;
  ro.n_threads = options.n_threads;
  ro.n_ctx = options.n_ctx;
  ZINC_ASSIGN_OR_RETURN(s->runner_, engine::Runner::create(*s->model_, ro));
  ZINC_ASSIGN_OR_RETURN(s->seq_, s->runner_->cache().add_sequence());
  if (!options.draft_model.empty()) {
    if (!s->runner_->cache().layout().recurrent_layers.empty())
      return error("%s: speculative decoding needs attention-only models: a recurrent state cannot be rolled back", model_path.c_str());
    ZINC_ASSIGN_OR_RETURN(s->draft_model_, model::Model::load(options.draft_model));
    auto draft_tok = tokenizer::Tokenizer::load(s->draft_model_->file());
    if (!draft_tok.ok()) return draft_tok.status().with_context(options.draft_model);
    ZINC_RETURN_IF_ERROR(check_draft_vocab(*s->tokenizer_, **draft_tok).with_context(options.draft_model));
    auto draft = engine::Runner::create(*s->draft_model_, ro);
    if (!draft.ok()) return draft.status().with_context(options.draft_model);
    s->draft_ = std::move(*draft);
    ZINC_ASSIGN_OR_RETURN(s->draft_seq_, s->draft_->cache().add_sequence());
  }
  s->sampler_ = std::make_unique<engine::Sampler>(prepared_sampling(options.sampling, s->tokenizer_.get()), int32_t(s->model_->hparams().n_vocab));
  return s;
}

nlohmann::ordered_json ChatSession::messages() const {
  auto list = nlohmann::ordered_json::array();
  if (!system_.empty()) list.push_back({{"role", "system"}, {"content", system_}});
  for (const Message& m : messages_) {
    nlohmann::ordered_json j = {{"role", m.role}, {"content", m.content}};
    if (!m.reasoning.empty()) j["reasoning_content"] = m.reasoning;
    list.push_back(std::move(j));
  }
  return list;
}

Status ChatSession::save(const std::string& path) const {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) return error("%s: cannot open for writing", path.c_str());
  out << messages().dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace) << "\n";
  out.close();
  if (!out) return error("%s: write failed", path.c_str());
  return Status();
}

Result<TurnStats> ChatSession::send(const std::string& user_text, const ChatOutput& out,
                                    const std::function<bool()>& cancelled) {
  messages_.push_back({"user", user_text, ""});
  chat::ChatRequest request;
  request.messages = messages();
  auto text = format_->render(request);
  if (!text.ok()) {
    messages_.pop_back();
    return text.status().with_context(model_path_ + ": chat template");
  }
  const bool opens_reasoning = chat::prompt_opens_reasoning(*text);
  const std::vector<int32_t> tokens = format_->tokenize(*text);
  const int64_t n_ctx = options_.n_ctx;
  if (tokens.empty()) {
    messages_.pop_back();
    return error("%s: the chat template rendered an empty prompt", model_path_.c_str());
  }
  if (int64_t(tokens.size()) >= n_ctx) {
    messages_.pop_back();
    return error("the conversation is %zu tokens, the context holds %lld: /reset, or a larger -c", tokens.size(),
                 (long long)n_ctx);
  }

  // Reuse the longest prefix the cache holds; at least one token must run to get logits. A
  // recurrent state cannot be rewound token by token: it goes back to the copy saved where the
  // last generation prompt began (the history before it is what later turns share), or the
  // sequence starts over.
  kv::Cache& cache = runner_->cache();
  const bool recurrent = !cache.layout().recurrent_layers.empty();
  size_t keep = 0;
  if (options_.reuse_cache) {
    keep = std::mismatch(cached_.begin(), cached_.end(), tokens.begin(), tokens.end()).first - cached_.begin();
    keep = std::min(keep, tokens.size() - 1);
  }
  if (keep < cached_.size()) {
    if (!recurrent) {
      cache.set_length(seq_, int64_t(keep));
    } else if (saved_length_ > 0 && keep >= saved_length_ &&
               runner_->restore_recurrent_state(seq_, saved_state_).ok()) {
      keep = saved_length_;
      cache.set_length(seq_, int64_t(keep));
    } else {
      keep = 0;
      saved_length_ = 0;
      cache.clear(seq_);
    }
    cached_.resize(keep);
  }
  if (draft_) draft_->cache().set_length(draft_seq_, std::min<int64_t>(draft_->cache().length(draft_seq_), int64_t(keep)));
  auto forget = [&] {  // after a failed step the cache may hold part of the prompt
    cache.clear(seq_);
    if (draft_) draft_->cache().clear(draft_seq_);
    cached_.clear();
    saved_length_ = 0;
    messages_.pop_back();
  };

  // A recurrent model runs the history first and saves its state where the generation prompt begins.
  size_t start = keep;
  if (recurrent) {
    if (auto history = format_->history_length(request, tokens); history.ok()) {
      const size_t mark = *history;
      if (mark > keep && mark < tokens.size()) {
        const std::span<const int32_t> part(tokens.data() + keep, mark - keep);
        for (int32_t t : part) sampler_->accept(t);
        if (auto step = runner_->decode(seq_, part, false); !step.ok()) {
          forget();
          return step.status();
        }
        auto saved = runner_->save_recurrent_state(seq_);
        if (!saved.ok()) {
          forget();
          return saved.status();
        }
        saved_state_ = std::move(*saved);
        saved_length_ = mark;
        start = mark;
      }
    }
  }

  engine::GenerateOptions go;
  go.stop_tokens = stop_tokens_;
  const int64_t room = n_ctx - int64_t(tokens.size());
  go.max_new_tokens = int32_t(options_.n_predict < 0 ? room : std::min<int64_t>(options_.n_predict, room));

  Message answer{"assistant", "", ""};
  chat::ReasoningSplitter splitter(opens_reasoning);
  auto show = [&](const chat::ReasoningSplitter::Delta& d) {
    if (!d.reasoning.empty()) out(true, d.reasoning);
    if (!d.content.empty()) out(false, d.content);
    answer.reasoning += d.reasoning;
    answer.content += d.content;
  };
  tokenizer::StreamingDecoder decoder(*tokenizer_, {.render_special = false, .strip_leading_space = true});
  const std::span<const int32_t> suffix(tokens.data() + start, tokens.size() - start);
  auto on_token = [&](int32_t t) {
    if (tokenizer_->vocab().valid_id(t)) show(splitter.push(decoder.push(t)));
    return !cancelled();
  };
  engine::DraftStats draft_stats;
  auto res = draft_ ? engine::generate_speculative(*runner_, seq_, *draft_, draft_seq_, suffix, *sampler_, go, options_.draft, on_token, &draft_stats)
                    : engine::generate(*runner_, seq_, suffix, *sampler_, go, on_token);
  if (!res.ok()) {
    forget();
    return res.status();
  }
  show(splitter.push(decoder.flush()));
  show(splitter.flush());
  cached_.assign(tokens.begin(), tokens.end());
  cached_.insert(cached_.end(), res->tokens.begin(), res->tokens.end());
  messages_.push_back(std::move(answer));

  TurnStats st;
  st.prompt_tokens = int64_t(tokens.size());
  st.cached_tokens = int64_t(keep);
  st.generated_tokens = int64_t(res->tokens.size());
  st.prefill_seconds = res->prefill_seconds;
  st.decode_seconds = res->decode_seconds;
  st.reason = res->reason;
  st.draft = draft_stats;
  return st;
}

}  // namespace zinc::cli
