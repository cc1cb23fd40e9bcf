#include "cli/chat_session.h"

#include <algorithm>
#include <fstream>

#include "chat/render_case.h"

namespace zinc::cli {
namespace {

// What llama.cpp falls back to when a model has no tokenizer.chat_template.
constexpr std::string_view kChatMl =
    "{%- for message in messages -%}\n"
    "{{- '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>\\n' -}}\n"
    "{%- endfor -%}\n"
    "{%- if add_generation_prompt -%}{{- '<|im_start|>assistant\\n' -}}{%- endif -%}\n";

constexpr std::string_view kThinkOpen = "<think>", kThinkClose = "</think>";

bool ends_with_open_think(std::string_view text) {
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.remove_suffix(1);
  return text.ends_with(kThinkOpen);
}

}  // namespace

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

  std::string source(kChatMl);
  ZINC_ASSIGN_OR_RETURN(auto own, file.find_string("tokenizer.chat_template"));
  if (own) {
    ZINC_ASSIGN_OR_RETURN(chat::ModelTemplate mt, chat::model_template(file));
    source = std::move(mt.source);
    s->bos_text_ = std::move(mt.bos_token);
    s->eos_text_ = std::move(mt.eos_token);
    s->has_model_template_ = true;
  } else {
    if (vocab.valid_id(s->tokenizer_->bos())) s->bos_text_ = std::string(vocab.text(s->tokenizer_->bos()));
    if (vocab.valid_id(s->tokenizer_->eos())) s->eos_text_ = std::string(vocab.text(s->tokenizer_->eos()));
  }
  auto tmpl = chat::Template::parse(source);
  if (!tmpl.ok()) return tmpl.status().with_context(model_path + ": chat template");
  s->template_ = std::make_unique<chat::Template>(std::move(*tmpl));

  s->stop_tokens_ = vocab.eog_ids();
  if (s->stop_tokens_.empty() && vocab.valid_id(s->tokenizer_->eos())) s->stop_tokens_ = {s->tokenizer_->eos()};

  engine::RunnerOptions ro;
  ro.backend = options.backend;
  ro.n_threads = options.n_threads;
  ro.n_ctx = options.n_ctx;
  ZINC_ASSIGN_OR_RETURN(s->runner_, engine::Runner::create(*s->model_, ro));
  ZINC_ASSIGN_OR_RETURN(s->seq_, s->runner_->cache().add_sequence());
  s->sampler_ = std::make_unique<engine::Sampler>(options.sampling, int32_t(s->model_->hparams().n_vocab));
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

// The conversation as the template renders it, with the generation prompt, as token ids. A BOS
// text the template writes is dropped when the tokenizer adds BOS itself (no double BOS).
Result<std::vector<int32_t>> ChatSession::render_prompt(bool* opens_reasoning) const {
  nlohmann::ordered_json context = {{"messages", messages()},
                                    {"add_generation_prompt", true},
                                    {"bos_token", bos_text_},
                                    {"eos_token", eos_text_}};
  auto text = template_->render(context);
  if (!text.ok()) return text.status().with_context(model_path_ + ": chat template");
  std::string_view prompt = *text;
  const tokenizer::VocabFlags& flags = tokenizer_->vocab().flags();
  if (flags.add_bos && !bos_text_.empty() && prompt.starts_with(bos_text_)) prompt.remove_prefix(bos_text_.size());
  *opens_reasoning = ends_with_open_think(prompt);
  return tokenizer_->encode(prompt, /*add_special=*/true, /*parse_special=*/true);
}

Result<TurnStats> ChatSession::send(const std::string& user_text, const ChatOutput& out,
                                    const std::function<bool()>& cancelled) {
  messages_.push_back({"user", user_text, ""});
  bool opens_reasoning = false;
  auto rendered = render_prompt(&opens_reasoning);
  if (!rendered.ok()) {
    messages_.pop_back();
    return rendered.status();
  }
  std::vector<int32_t>& tokens = *rendered;
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
  // recurrent state cannot be rewound, so a model with one starts over when the prefix breaks.
  kv::Cache& cache = runner_->cache();
  size_t keep = std::mismatch(cached_.begin(), cached_.end(), tokens.begin(), tokens.end()).first - cached_.begin();
  keep = std::min(keep, tokens.size() - 1);
  if (keep < cached_.size()) {
    if (cache.state_bytes() > 0) {
      keep = 0;
      cache.clear(seq_);
    } else {
      cache.set_length(seq_, int64_t(keep));
    }
    cached_.resize(keep);
  }

  engine::GenerateOptions go;
  go.stop_tokens = stop_tokens_;
  const int64_t room = n_ctx - int64_t(tokens.size());
  go.max_new_tokens = int32_t(options_.n_predict < 0 ? room : std::min<int64_t>(options_.n_predict, room));

  Message answer{"assistant", "", ""};
  auto collect = [&](bool reasoning, std::string_view text) {
    (reasoning ? answer.reasoning : answer.content) += text;
    out(reasoning, text);
  };
  ThinkSplitter splitter(opens_reasoning);
  tokenizer::StreamingDecoder decoder(*tokenizer_, {.render_special = false, .strip_leading_space = true});
  const std::span<const int32_t> suffix(tokens.data() + keep, tokens.size() - keep);
  auto res = engine::generate(*runner_, seq_, suffix, *sampler_, go, [&](int32_t t) {
    if (tokenizer_->vocab().valid_id(t)) splitter.push(decoder.push(t), collect);
    return !cancelled();
  });
  if (!res.ok()) {
    // The cache may hold part of the prompt: start the next turn from nothing.
    cache.clear(seq_);
    cached_.clear();
    messages_.pop_back();
    return res.status();
  }
  splitter.push(decoder.flush(), collect);
  splitter.flush(collect);
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
  return st;
}

void ThinkSplitter::emit(std::string_view text, const ChatOutput& out) {
  if (at_segment_start_) {
    const size_t start = text.find_first_not_of('\n');
    if (start == std::string_view::npos) return;
    text.remove_prefix(start);
    at_segment_start_ = false;
  }
  if (!text.empty()) out(in_reasoning_, text);
}

void ThinkSplitter::push(std::string_view text, const ChatOutput& out) {
  held_.append(text);
  for (;;) {
    const std::string_view tag = in_reasoning_ ? kThinkClose : kThinkOpen;
    const size_t at = held_.find(tag);
    if (at != std::string::npos) {
      emit(std::string_view(held_).substr(0, at), out);
      held_.erase(0, at + tag.size());
      in_reasoning_ = !in_reasoning_;
      at_segment_start_ = true;
      continue;
    }
    // Keep back the longest tail that could start the tag.
    size_t hold = std::min(held_.size(), tag.size() - 1);
    while (hold > 0 && !tag.starts_with(std::string_view(held_).substr(held_.size() - hold))) --hold;
    emit(std::string_view(held_).substr(0, held_.size() - hold), out);
    held_.erase(0, held_.size() - hold);
    return;
  }
}

void ThinkSplitter::flush(const ChatOutput& out) {
  emit(held_, out);
  held_.clear();
}

}  // namespace zinc::cli
