#include "server/generation.h"

#include <httplib.h>

#include <chrono>
#include <functional>
#include <limits>
#include <optional>
#include <random>
#include <vector>

#include "chat/tool_calls.h"
#include "engine/grammar_constraint.h"
#include "engine/json_constraint.h"
#include "engine/json_schema.h"
#include "engine/xml_call.h"
#include "server/infill.h"
#include "server/text_pipeline.h"

namespace zinc::server {

using Clock = std::chrono::steady_clock;

int64_t unix_time() {
  return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
}

void reply_error(httplib::Response& res, const ApiError& e) {
  res.status = e.status;
  res.set_content(dump(error_json(e)), "application/json");
}

std::optional<ApiError> chat_request(const Json& body, const Json& tools, chat::ChatRequest* out) {
  auto m = body.find("messages");
  if (m == body.end() || !m->is_array() || m->empty()) return ApiError{400, "'messages' must be a non-empty array", "invalid_request_error", "messages", ""};
  chat::ChatRequest& r = *out;
  r.messages = *m;
  r.tools = tools;
  if (auto k = body.find("chat_template_kwargs"); k != body.end() && !k->is_null()) r.kwargs = *k;
  // OpenAI's reasoning_effort reaches templates that read it (gpt-oss) as a template variable.
  if (auto e = body.find("reasoning_effort"); e != body.end() && !e->is_null()) {
    if (*e != "minimal" && *e != "low" && *e != "medium" && *e != "high")
      return ApiError{400, "'reasoning_effort' must be \"minimal\", \"low\", \"medium\" or \"high\"", "invalid_request_error",
                      "reasoning_effort", ""};
    if (r.kwargs.is_object() && !r.kwargs.contains("reasoning_effort")) r.kwargs["reasoning_effort"] = *e;
  }
  return std::nullopt;
}

namespace {

// Completions' 'suffix': the prompt and the suffix in the fill-in-the-middle layout (/infill's),
// so the answer is what goes between them. `text_prompt`: the prompt was text (its tokens are
// taken again without BOS, as /infill takes its prefix).
std::optional<ApiError> with_suffix(GenerationContext& ctx, const Json& body, bool text_prompt, std::vector<int32_t>* ids) {
  const auto it = body.find("suffix");
  if (it == body.end() || it->is_null()) return std::nullopt;
  if (!it->is_string()) return bad_request("suffix", "'suffix' must be a string");
  if (body.value("echo", false) == true) return bad_request("suffix", "'suffix' cannot go with 'echo'");
  const tokenizer::SpecialIds& s = ctx.tok.vocab().special();
  if (s.fim_pre == tokenizer::kNoToken || s.fim_suf == tokenizer::kNoToken || s.fim_mid == tokenizer::kNoToken)
    return bad_request("suffix", "'suffix' needs a model with fill-in-the-middle tokens (FIM prefix, suffix and middle); this one has none");
  InfillParts parts;
  if (text_prompt) {
    const Json& p = body["prompt"];
    parts.prefix = ctx.tok.encode((p.is_array() ? p[0] : p).get<std::string>(), false, false);
  } else {
    parts.prefix = *ids;
  }
  parts.suffix = ctx.tok.encode(it->get<std::string>(), false, false);
  const int64_t n_ctx = ctx.scheduler.options().n_ctx;
  *ids = infill_tokens(ctx.tok, parts, std::min(kInfillWindow, n_ctx / 2), 0);
  return std::nullopt;
}

// Prompt tokens of a request, or the error to answer with; for chats where the scheduler caches
// snapshots, `checkpoint` becomes where the history ends (engine::Request::checkpoint).
std::optional<ApiError> prompt_tokens(GenerationContext& ctx, const Json& body, bool chat, const Json& tools,
                                      std::vector<int32_t>* out, bool* opens_reasoning, int64_t* checkpoint) {
  if (chat) {
    chat::ChatRequest r;
    if (auto e = chat_request(body, tools, &r)) return e;
    auto text = ctx.format.render(r);
    if (!text.ok()) return ApiError{400, "chat template: " + text.status().message(), "invalid_request_error", "messages", ""};
    *opens_reasoning = chat::prompt_opens_reasoning(*text);
    *out = ctx.format.tokenize(*text);
    if (ctx.scheduler.caches_at_checkpoints())
      if (auto history = ctx.format.history_length(r, *out); history.ok() && *history > 0) *checkpoint = int64_t(*history);
    return std::nullopt;
  }
  auto p = body.find("prompt");
  if (p == body.end()) return ApiError{400, "'prompt' is required", "invalid_request_error", "prompt", ""};
  const Json* prompt = &*p;
  if (prompt->is_array() && prompt->size() == 1 && (*prompt)[0].is_string()) prompt = &(*prompt)[0];
  if (prompt->is_string()) {
    *out = ctx.tok.encode(prompt->get<std::string>(), /*add_special=*/true, /*parse_special=*/true);
  } else if (prompt->is_array() && !prompt->empty()) {
    for (const auto& x : *prompt) {
      if (!x.is_number_integer() || !ctx.tok.vocab().valid_id(x.get<int64_t>()))
        return ApiError{400, "'prompt' must be a string or an array of token ids within the vocabulary", "invalid_request_error", "prompt", ""};
      out->push_back(int32_t(x.get<int64_t>()));
    }
  } else {
    return ApiError{400, "'prompt' must be a string (or one string in an array, or token ids)", "invalid_request_error", "prompt", ""};
  }
  if (out->empty()) return ApiError{400, "the prompt has no tokens", "invalid_request_error", "prompt", ""};
  return with_suffix(ctx, body, prompt->is_string(), out);
}

// One choice of a request in flight: its stream, the text pipeline and the pieces of its response.
struct Job {
  Job(GenerationContext& c, bool is_chat, GenerationParams params, bool opens_reasoning, bool logprob_entries)
      : ctx(c), chat(is_chat), entries(is_chat || logprob_entries), p(std::move(params)),
        // A constrained answer (JSON mode, a schema, a forced call) is all content, even after a
        // prompt that opens <think>.
        pipeline(c.tok, p.stop, is_chat && !p.json_object && !p.json_schema && !p.grammar && p.forced_tools.empty(), opens_reasoning), id(random_id(is_chat ? "chatcmpl-" : "cmpl-")), created(unix_time()) {}
  GenerationContext& ctx;
  bool chat;
  bool entries;  // logprobs as chat's entries (with ids where not chat: AnswerShape::logprob_entries)
  GenerationParams p;
  TextPipeline pipeline;
  std::string id;  // the request's: every choice of it shares id and created
  int64_t created;
  int index = 0;   // the choice's
  std::shared_ptr<engine::Stream> stream;
  Clock::time_point t_start = Clock::now(), t_first, t_last;
  bool first = true;
  int64_t prompt_tokens = 0, cached_tokens = 0;
  std::vector<int32_t> prompt_ids;  // with return_token_ids
  Json token_ids = Json::array();   // with return_token_ids: the answer's so far
  size_t ids_sent = 0;              // of token_ids, in chunks sent
  bool prompt_ids_sent = false;     // in the first chunk
  std::string finish_reason;  // set when done
  std::string error;
  Json logprobs_chat = Json::array();  // logprobs.content entries
  Json lp_tokens = Json::array(), lp_values = Json::array(), lp_top = Json::array();
  size_t text_bytes = 0;  // completions: the answer's text so far, for text_offset (control tokens add none)
  Json lp_offsets = Json::array();
  std::string echo;        // completions with echo: the prompt's text, before the answer
  bool echo_sent = false;  // streamed: in its own first chunk
  std::vector<size_t> prompt_offsets;  // echo with logprobs: each prompt token's text_offset
  size_t n_prompt_scored = 0;          // of them, recorded
  Json prompt_lp = Json::array();      // prompt_logprobs: vLLM's entries, null for the first token
  std::optional<chat::ToolCallParser> tools;  // chat requests with tools, where the template's syntax is known
  int n_taken = 0;  // calls taken out of the content
  bool short_call_ids = false;  // Mistral's templates take 9 alphanumerics as a call's id
  int n_calls = 0;  // calls sent

  // The calls found in content (taken out of it), whatever remains of it at the end; with
  // parallel_tool_calls false, the first only.
  std::vector<chat::ToolCall> take_calls(std::string& content, bool end) {
    if (!tools) return {};
    auto d = tools->push(content);
    if (end) {
      auto tail = tools->flush();
      d.content += tail.content;
      for (auto& c : tail.calls) d.calls.push_back(std::move(c));
    }
    content = std::move(d.content);
    if (!p.parallel_tool_calls) d.calls.resize(std::min<size_t>(d.calls.size(), n_taken > 0 ? 0 : 1));
    n_taken += int(d.calls.size());
    return std::move(d.calls);
  }
  // parallel_tool_calls false and the call made: generation goes no further.
  bool call_ends_answer() const { return !p.parallel_tool_calls && n_taken > 0; }
  // An OpenAI tool_calls entry for the next call, counted in n_calls; index >= 0 for stream deltas.
  Json call_json(const chat::ToolCall& c, int index) {
    Json j = Json::object();
    if (index >= 0) j["index"] = index;
    j["id"] = short_call_ids ? random_id("", 9) : random_id("call_");
    j["type"] = "function";
    j["function"] = {{"name", c.name}, {"arguments", c.arguments}};
    ++n_calls;
    return j;
  }
  std::string final_reason() const { return n_calls > 0 && finish_reason == "stop" ? "tool_calls" : finish_reason; }
  // vLLM's stop_reason: the stop string that ended the answer, else null.
  Json stop_reason() const { return pipeline.stopped() ? Json(pipeline.stop_string()) : Json(nullptr); }
  Json tool_chunk(const chat::ToolCall& c) {
    Json choice = {{"index", index}, {"delta", {{"tool_calls", Json::array({call_json(c, n_calls)})}}}, {"logprobs", nullptr},
                   {"finish_reason", nullptr}};
    Json j = {{"id", id}, {"object", "chat.completion.chunk"}, {"created", created}, {"model", ctx.options.model_name},
              {"system_fingerprint", "zinc"}, {"choices", Json::array({choice})}};
    if (p.include_usage) j["usage"] = nullptr;
    return j;
  }

  // A logprobs entry: the token, its bytes and `value` under `key` ("logprob", or "prob" after the sampling chain).
  Json token_entry(int32_t id_, float value, const char* key = "logprob") const {
    const std::string_view piece = ctx.tok.decode_piece(id_, true);
    Json bytes = Json::array();
    for (char c : piece) bytes.push_back(int(uint8_t(c)));
    Json entry = {{"token", std::string(piece)}, {key, value}, {"bytes", bytes}};
    if (!chat || p.post_sampling_probs) entry["id"] = id_;
    return entry;
  }
  // Records the logprobs of one token event; returns the chunk's logprobs value (or null).
  Json add_logprobs(const engine::Event& e) {
    if (p.top_logprobs < 0) return nullptr;
    if (entries) {
      Json entry, top = Json::array();
      if (p.post_sampling_probs) {  // llama.cpp's shape: probabilities after the chain
        entry = token_entry(e.token, e.prob, "prob");
        for (const auto& t : e.post_top) top.push_back(token_entry(t.token, t.prob, "prob"));
        entry["top_probs"] = top;
      } else {
        entry = token_entry(e.token, e.logprob);
        for (const auto& t : e.top) top.push_back(token_entry(t.token, t.logprob));
        entry["top_logprobs"] = top;
      }
      logprobs_chat.push_back(entry);
      return Json{{"content", Json::array({entry})}};
    }
    const std::string piece(ctx.tok.decode_piece(e.token, true));
    Json top = Json::object();
    for (const auto& t : e.top) top[std::string(ctx.tok.decode_piece(t.token, true))] = t.logprob;
    lp_tokens.push_back(piece);
    lp_values.push_back(e.logprob);
    lp_top.push_back(top);
    lp_offsets.push_back(text_bytes);
    text_bytes += ctx.tok.decode_piece(e.token).size();
    return Json{{"tokens", Json::array({piece})}, {"token_logprobs", Json::array({e.logprob})}, {"top_logprobs", Json::array({top})},
                {"text_offset", Json::array({lp_offsets.back()})}};
  }
  // Records a prompt token's logprob (echo with logprobs, prompt_logprobs): null for the first,
  // which nothing scores.
  void add_prompt_logprob(const engine::Event& e) {
    if (p.prompt_logprobs >= 0) {
      Json entry = nullptr;
      if (e.scored) {
        auto add = [&](int32_t token, float lp, int32_t rank) {
          const std::string key = std::to_string(token);
          if (!entry.contains(key))
            entry[key] = {{"logprob", lp}, {"rank", rank}, {"decoded_token", std::string(ctx.tok.decode_piece(token, true))}};
        };
        entry = Json::object();
        add(e.token, e.logprob, e.rank);
        for (size_t i = 0; i < e.top.size() && i < size_t(p.prompt_logprobs); ++i) add(e.top[i].token, e.top[i].logprob, int32_t(i + 1));
      }
      prompt_lp.push_back(std::move(entry));
    }
    if (!p.echo || p.top_logprobs < 0) return;
    lp_tokens.push_back(std::string(ctx.tok.decode_piece(e.token, true)));
    Json top = nullptr;
    if (e.scored) {
      top = Json::object();
      for (size_t i = 0; i < e.top.size() && i < size_t(p.top_logprobs); ++i)
        top[std::string(ctx.tok.decode_piece(e.top[i].token, true))] = e.top[i].logprob;
    }
    lp_values.push_back(e.scored ? Json(e.logprob) : Json(nullptr));
    lp_top.push_back(top);
    lp_offsets.push_back(n_prompt_scored < prompt_offsets.size() ? prompt_offsets[n_prompt_scored] : 0);
    ++n_prompt_scored;
  }
  Json logprobs_all() const {
    if (p.top_logprobs < 0) return nullptr;
    if (entries) return Json{{"content", logprobs_chat}};
    return Json{{"tokens", lp_tokens}, {"token_logprobs", lp_values}, {"top_logprobs", lp_top}, {"text_offset", lp_offsets}};
  }
  // At each answer token; at the first, the answer's text offsets start after the echoed prompt.
  void on_token_timing() {
    if (first) text_bytes = echo.size();
    const auto now = Clock::now();
    if (first) t_first = now;
    if (first) ctx.metrics.time_to_first_token(std::chrono::duration<double>(now - t_start).count());
    else ctx.metrics.time_per_token(std::chrono::duration<double>(now - t_last).count());
    first = false;
    t_last = now;
  }
  // Handles a done event (or the stop string): sets finish_reason / error.
  void on_done(const engine::Event& e) {
    cached_tokens = e.cached_tokens;
    if (e.finish == engine::FinishReason::kError) error = e.error;
    finish_reason = e.finish == engine::FinishReason::kLength ? "length" : "stop";
  }
  // Chunk JSON for a delta (chat: delta object; completions: text).
  Json chunk(const chat::ReasoningSplitter::Delta& d, Json logprobs, const char* finish, bool with_role) {
    Json choice;
    if (chat) {
      Json delta = Json::object();
      if (with_role) delta["role"] = "assistant";
      if (!d.content.empty() || with_role) delta["content"] = d.content;
      if (!d.reasoning.empty()) delta["reasoning_content"] = d.reasoning;
      choice = {{"index", index}, {"delta", delta}, {"logprobs", logprobs}, {"finish_reason", finish ? Json(finish) : Json(nullptr)}};
    } else {
      choice = {{"text", d.content}, {"index", index}, {"logprobs", logprobs}, {"finish_reason", finish ? Json(finish) : Json(nullptr)}};
    }
    if (p.return_token_ids) {
      choice["token_ids"] = Json(std::vector<Json>(token_ids.begin() + long(ids_sent), token_ids.end()));
      ids_sent = token_ids.size();
      if (!chat && !prompt_ids_sent) choice["prompt_token_ids"] = prompt_ids;
    }
    Json c = {{"id", id}, {"object", chat ? "chat.completion.chunk" : "text_completion"}, {"created", created},
              {"model", ctx.options.model_name}, {"system_fingerprint", "zinc"}, {"choices", Json::array({choice})}};
    if (chat && p.return_token_ids && !prompt_ids_sent) c["prompt_token_ids"] = prompt_ids;
    prompt_ids_sent = true;
    if (p.include_usage) c["usage"] = nullptr;
    return c;
  }
  // Records a token drawn (return_token_ids).
  void add_token_id(int32_t token) {
    if (p.return_token_ids) token_ids.push_back(token);
  }
};

using Jobs = std::vector<std::shared_ptr<Job>>;

// The prompt counts once, whatever the number of choices.
Json usage(const Jobs& jobs) {
  int64_t completion = 0;
  for (const auto& j : jobs) completion += j->pipeline.n_tokens();
  const Job& first = *jobs[0];
  return Json{{"prompt_tokens", first.prompt_tokens}, {"completion_tokens", completion},
              {"total_tokens", first.prompt_tokens + completion}, {"prompt_tokens_details", {{"cached_tokens", first.cached_tokens}}}};
}

// llama.cpp's timings of the first choice: the prompt until its first token, the rest after.
Json timings(const Jobs& jobs) {
  const Job& j = *jobs[0];
  const auto ms = [](Clock::duration d) { return std::chrono::duration<double, std::milli>(d).count(); };
  const Clock::time_point first = j.first ? Clock::now() : j.t_first;
  const double prompt_ms = ms(first - j.t_start), predicted_ms = j.first ? 0.0 : ms(j.t_last - j.t_first);
  const int64_t n = j.pipeline.n_tokens();
  return Json{{"prompt_n", j.prompt_tokens - j.cached_tokens}, {"prompt_ms", prompt_ms}, {"predicted_n", n}, {"predicted_ms", predicted_ms},
              {"predicted_per_second", predicted_ms > 0 && n > 1 ? (n - 1) * 1000.0 / predicted_ms : 0.0}};
}

void cancel(const Jobs& jobs) {
  for (const auto& j : jobs) j->stream->cancel();
}

bool delta_empty(const chat::ReasoningSplitter::Delta& d) { return d.content.empty() && d.reasoning.empty(); }

// Generates each choice to its end (the others go on meanwhile in the scheduler) and answers with all.
// OpenAI's own shapes.
class OpenAiShape : public AnswerShape {
 public:
  void error(httplib::Response& res, const ApiError& e) const override { reply_error(res, e); }
  Json whole(const Json& completion) const override { return completion; }
  std::string chunk(const Json& chunk) override { return "data: " + dump(chunk) + "\n\n"; }
  std::string end() override { return "data: [DONE]\n\n"; }
};

void run_whole(const Jobs& jobs, httplib::Response& res, const AnswerShape& shape) {
  Json choices = Json::array();
  for (const auto& jp : jobs) {
    Job& job = *jp;
    std::string content, reasoning;
    std::vector<chat::ToolCall> calls;
    auto add = [&](chat::ReasoningSplitter::Delta d, bool end) {
      for (auto& c : job.take_calls(d.content, end)) calls.push_back(std::move(c));
      content += d.content;
      reasoning += d.reasoning;
    };
    for (;;) {
      if (job.ctx.stopping) {
        job.stream->cancel();
        job.finish_reason = "stop";
        break;
      }
      auto e = job.stream->next(std::chrono::milliseconds(100));
      if (!e) continue;
      if (e->kind == engine::Event::Kind::kPrompt) {
        job.add_prompt_logprob(*e);
        continue;
      }
      if (e->kind == engine::Event::Kind::kDone) {
        job.on_done(*e);
        break;
      }
      job.on_token_timing();
      job.add_logprobs(*e);
      job.add_token_id(e->token);
      add(job.pipeline.push(e->token), false);
      if (job.pipeline.stopped() || job.call_ends_answer()) {
        job.stream->cancel();
        job.finish_reason = "stop";
        break;
      }
    }
    if (!job.error.empty()) {
      cancel(jobs);
      return shape.error(res, {500, job.error, "server_error", "", ""});
    }
    add(job.pipeline.finish(), true);
    job.ctx.metrics.tokens(job.index == 0 ? job.prompt_tokens : 0, job.pipeline.n_tokens());
    if (job.chat) {
      Json call_list = Json::array();
      for (const auto& c : calls) call_list.push_back(job.call_json(c, -1));
      Json message = {{"role", "assistant"}, {"content", call_list.empty() || !content.empty() ? Json(content) : Json(nullptr)}};
      if (!reasoning.empty()) message["reasoning_content"] = reasoning;
      if (!call_list.empty()) message["tool_calls"] = call_list;
      choices.push_back({{"index", job.index}, {"message", message}, {"logprobs", job.logprobs_all()}, {"finish_reason", job.final_reason()},
                         {"stop_reason", job.stop_reason()}});
    } else {
      choices.push_back({{"text", job.echo + content}, {"index", job.index}, {"logprobs", job.logprobs_all()}, {"finish_reason", job.finish_reason},
                         {"stop_reason", job.stop_reason()}});
      if (job.p.return_token_ids) choices.back()["prompt_token_ids"] = job.prompt_ids;
      if (job.p.prompt_logprobs >= 0) choices.back()["prompt_logprobs"] = job.prompt_lp;
    }
    if (job.p.return_token_ids) choices.back()["token_ids"] = job.token_ids;
  }
  const Job& first = *jobs[0];
  Json body = {{"id", first.id}, {"object", first.chat ? "chat.completion" : "text_completion"}, {"created", first.created},
               {"model", first.ctx.options.model_name}, {"system_fingerprint", "zinc"}, {"choices", choices},
               {"usage", usage(jobs)}, {"timings", timings(jobs)}};
  if (first.chat && first.p.return_token_ids) body["prompt_token_ids"] = first.prompt_ids;
  if (first.chat && first.p.prompt_logprobs >= 0) body["prompt_logprobs"] = first.prompt_lp;
  res.set_content(dump(shape.whole(body)), "application/json");
}

// Streams a request's choices as server-sent events, each chunk naming its choice; returns false
// when the client went away.
bool run_stream(const Jobs& jobs, httplib::DataSink& sink, AnswerShape& shape) {
  auto send = [&](const Json& j) {
    const std::string s = shape.chunk(j);
    return s.empty() || sink.write(s.data(), s.size());
  };
  auto gone = [&] {
    cancel(jobs);
    return false;
  };
  for (const auto& j : jobs)
    if (j->chat && !send(j->chunk({}, nullptr, nullptr, true))) return gone();
  // One event of a choice; false when the choice has ended (or the client went away: *ok false).
  auto step = [&](Job& job, std::chrono::milliseconds wait, bool* ok, bool* got) {
    *got = false;
    if (job.ctx.stopping) {
      job.stream->cancel();
      job.finish_reason = "stop";
      return false;
    }
    auto e = job.stream->next(wait);
    if (!e) return true;
    *got = true;
    if (e->kind == engine::Event::Kind::kPrompt) {
      job.add_prompt_logprob(*e);
      return true;
    }
    if (!job.echo.empty() && !job.echo_sent) {  // the prompt's text and logprobs, in a chunk of their own
      job.echo_sent = true;
      if (!send(job.chunk({{}, job.echo}, job.logprobs_all(), nullptr, false))) {
        *ok = false;
        return false;
      }
    }
    if (e->kind == engine::Event::Kind::kDone) {
      job.on_done(*e);
      return false;
    }
    job.on_token_timing();
    Json lp = job.add_logprobs(*e);
    job.add_token_id(e->token);
    auto d = job.pipeline.push(e->token);
    const auto calls = job.take_calls(d.content, /*end=*/false);
    bool sent = (delta_empty(d) && lp.is_null()) || send(job.chunk(d, lp, nullptr, false));
    for (const auto& c : calls) sent = sent && send(job.tool_chunk(c));
    if (!sent) {
      *ok = false;
      return false;
    }
    if (job.pipeline.stopped() || job.call_ends_answer()) {
      job.stream->cancel();
      job.finish_reason = "stop";
      return false;
    }
    return true;
  };
  // A choice's last chunks, once it has ended.
  auto finish = [&](Job& job) {
    if (!job.error.empty()) return send(error_json({500, job.error, "server_error", "", ""}));
    auto tail = job.pipeline.finish();
    const auto calls = job.take_calls(tail.content, /*end=*/true);
    if (!delta_empty(tail) && !send(job.chunk(tail, nullptr, nullptr, false))) return false;
    for (const auto& c : calls)
      if (!send(job.tool_chunk(c))) return false;
    job.ctx.metrics.tokens(job.index == 0 ? job.prompt_tokens : 0, job.pipeline.n_tokens());
    Json last = job.chunk({}, nullptr, job.final_reason().c_str(), false);
    last["choices"][0]["stop_reason"] = job.stop_reason();
    return send(last);
  };
  std::vector<bool> open(jobs.size(), true);
  size_t n_open = jobs.size();
  bool idle = true;  // the last round over the choices found no event
  bool failed = false;
  while (n_open > 0) {
    if (!sink.is_writable()) return gone();
    bool any = false, waited = false;
    for (size_t i = 0; i < jobs.size(); ++i) {
      if (!open[i]) continue;
      // One choice: wait as long as it takes. Several: poll, and wait on the first open one
      // after a round without events.
      const auto wait = jobs.size() == 1 ? std::chrono::milliseconds(100)
                                         : std::chrono::milliseconds(idle && !waited ? 5 : 0);
      waited = true;
      bool ok = true, got = false;
      const bool going = step(*jobs[i], wait, &ok, &got);
      if (!ok) return gone();
      any = any || got;
      if (going) continue;
      open[i] = false;
      --n_open;
      if (!jobs[i]->error.empty()) failed = true;
      if (!finish(*jobs[i])) return gone();
    }
    idle = !any;
  }
  const Job& first = *jobs[0];
  if (first.p.include_usage && !failed) {
    Json u = {{"id", first.id}, {"object", first.chat ? "chat.completion.chunk" : "text_completion"}, {"created", first.created},
              {"model", first.ctx.options.model_name}, {"system_fingerprint", "zinc"}, {"choices", Json::array()}, {"usage", usage(jobs)},
              {"timings", timings(jobs)}};
    if (!send(u)) return gone();
  }
  if (const std::string end = shape.end(); !end.empty() && !sink.write(end.data(), end.size())) return gone();
  sink.done();
  return true;
}

}  // namespace

namespace {

// Makes a constraint for each choice of a request from what was compiled once.
using ConstraintMaker = std::function<std::shared_ptr<engine::TokenConstraint>()>;

// A forced call's constraint: the call's JSON inside the markup the model writes calls in, or
// Qwen's XML form.
struct CallForm {
  std::shared_ptr<const engine::JsonSchema> schema;
  std::string before, after;
};

Result<ConstraintMaker> call_constraint(const GenerationContext& ctx, const GenerationParams& p, const std::vector<int32_t>& eog) {
  std::vector<engine::JsonSchema::Tool> tools;
  for (const std::string& name : p.forced_tools)
    for (const auto& t : p.tools)
      if (t["function"]["name"] == name) tools.push_back({name, t["function"].value("parameters", Json())});
  auto form = std::make_shared<CallForm>();
  std::string args_key;
  switch (ctx.format.tool_syntax()) {
    case chat::ToolCallSyntax::kHermes:
      form->before = "<tool_call>\n";
      form->after = "\n</tool_call>";
      args_key = "arguments";
      break;
    case chat::ToolCallSyntax::kLlama3:
      args_key = "parameters";
      break;
    case chat::ToolCallSyntax::kQwenXml: {
      ZINC_ASSIGN_OR_RETURN(std::shared_ptr<const engine::XmlCall> call, engine::XmlCall::compile(tools));
      return ConstraintMaker([vocab = ctx.token_vocab, call, eog] {
        return std::make_shared<engine::XmlCallConstraint>(vocab, engine::XmlCallPrefix(call.get()), eog, call);
      });
    }
    case chat::ToolCallSyntax::kMistral:
      return error("Mistral models begin their calls with the [TOOL_CALLS] control token, which zinc cannot hold generation "
                   "to; use tool_choice \"auto\"");
    case chat::ToolCallSyntax::kNone:
      return error("this model's chat template writes tool calls in no format zinc can hold generation to (it can: "
                   "<tool_call> JSON as Qwen2.5, Qwen3 and Hermes, Qwen3-Coder's and Qwen3.5's <function=...> form, "
                   "and Llama 3's JSON answers)");
  }
  ZINC_ASSIGN_OR_RETURN(form->schema, engine::JsonSchema::compile_call(tools, args_key));
  return ConstraintMaker([vocab = ctx.token_vocab, form, eog] {
    engine::FramedPrefix<engine::SchemaPrefix> start(&form->before, engine::SchemaPrefix(form->schema.get()), &form->after);
    return std::make_shared<engine::CallConstraint>(vocab, start, eog, form);
  });
}

}  // namespace

namespace {

// Completions' echo: the prompt as the request gave it (token ids: their text).
std::string echo_text(const GenerationContext& ctx, const Json& body, const std::vector<int32_t>& prompt) {
  const Json* given = &body["prompt"];
  if (given->is_array() && given->size() == 1 && (*given)[0].is_string()) given = &(*given)[0];
  if (given->is_string()) return given->get<std::string>();
  tokenizer::DecodeOptions as_text;
  as_text.remove_special = true;
  auto text = ctx.tok.decode(prompt, as_text);
  return text.ok() ? *text : std::string();
}

// Each prompt token's offset in the echoed text: its pieces' lengths so far, less what the text
// lacks at the start (SentencePiece's leading space).
std::vector<size_t> echo_offsets(const GenerationContext& ctx, const std::vector<int32_t>& prompt, const std::string& echo) {
  std::vector<size_t> offsets;
  size_t total = 0;
  for (int32_t t : prompt) {
    offsets.push_back(total);
    total += ctx.tok.decode_piece(t).size();
  }
  const size_t dropped = echo.size() < total ? total - echo.size() : 0;
  for (size_t& o : offsets) o = o > dropped ? o - dropped : 0;
  return offsets;
}

// DRY's breaker table for a breaker list: built from the vocabulary once, a few lists kept.
std::shared_ptr<const engine::DryBreakers> dry_breakers(GenerationContext& ctx, const std::vector<std::string>& list) {
  std::lock_guard lock(ctx.dry_mu);
  if (auto it = ctx.dry_tables.find(list); it != ctx.dry_tables.end()) return it->second;
  if (ctx.dry_tables.size() >= 8) ctx.dry_tables.clear();
  return ctx.dry_tables[list] = engine::DryBreakers::of(ctx.tok, list);
}

void generate(GenerationContext& ctx, const Json& body, httplib::Response& res, bool chat, std::shared_ptr<AnswerShape> shape) {
  auto reply_error = [&](httplib::Response& r, const ApiError& e) { shape->error(r, e); };
  GenerationParams p;
  if (auto e = parse_generation(body, chat, &p, &ctx.grammar_tokens)) return reply_error(res, *e);
  if (p.sampling.dry.on()) p.sampling.dry.breakers = dry_breakers(ctx, p.sampling.dry.sequence_breakers);
  const int32_t n_vocab = ctx.tok.vocab().n_tokens();
  for (const auto& [id, bias] : p.sampling.logit_bias)
    if (id >= n_vocab)
      return reply_error(res, {400, "'logit_bias' names token " + std::to_string(id) + ", but the vocabulary has " + std::to_string(n_vocab) + " tokens",
                               "invalid_request_error", "logit_bias", ""});
  if (p.post_sampling_probs && !chat && !shape->logprob_entries())
    return reply_error(res, {400, "'post_sampling_probs' needs llama.cpp's /completion or a chat endpoint (this answer's logprobs are OpenAI's lists)",
                             "invalid_request_error", "post_sampling_probs", ""});
  std::vector<int32_t> prompt;
  bool opens_reasoning = false;
  int64_t checkpoint = -1;
  if (auto e = prompt_tokens(ctx, body, chat, p.tools, &prompt, &opens_reasoning, &checkpoint)) return reply_error(res, *e);
  const int64_t n_ctx = ctx.scheduler.options().n_ctx;
  if (int64_t(prompt.size()) >= n_ctx)
    return reply_error(res, {400, "the prompt has " + std::to_string(prompt.size()) + " tokens, but the context holds " + std::to_string(n_ctx) +
                                     " tokens (prompt and completion); shorten the prompt",
                             "invalid_request_error", chat ? "messages" : "prompt", "context_length_exceeded"});

  // Each choice has its own constraint state, made from what is compiled here once.
  const std::vector<int32_t> eog = ctx.tok.vocab().eog_ids();
  ConstraintMaker constraint = [] { return std::shared_ptr<engine::TokenConstraint>(); };
  if (p.json_object) {
    constraint = [&ctx, eog] { return std::make_shared<engine::JsonConstraint>(ctx.token_vocab, engine::JsonPrefix(), eog); };
  } else if (p.json_schema) {
    constraint = [&ctx, eog, schema = p.json_schema] {
      return std::make_shared<engine::SchemaConstraint>(ctx.token_vocab, engine::SchemaPrefix(schema.get()), eog, schema);
    };
  } else if (p.grammar) {
    constraint = [&ctx, eog, grammar = p.grammar] { return engine::GrammarConstraint::make(ctx.token_vocab, grammar, eog); };
  } else if (!p.forced_tools.empty()) {
    auto maker = call_constraint(ctx, p, eog);
    if (!maker.ok()) return reply_error(res, {400, "tool_choice: " + maker.status().message(), "invalid_request_error", "tool_choice", ""});
    constraint = std::move(*maker);
  }
  const std::string echo = p.echo ? echo_text(ctx, body, prompt) : std::string();
  const std::vector<size_t> offsets = p.echo && p.top_logprobs >= 0 ? echo_offsets(ctx, prompt, echo) : std::vector<size_t>();
  const bool parse_calls = chat && p.parse_tool_calls && p.tools.is_array() && !p.tools.empty() &&
                           ctx.format.tool_syntax() != chat::ToolCallSyntax::kNone;
  auto jobs = std::make_shared<Jobs>();
  for (int32_t i = 0; i < p.n; ++i) {
    engine::Request er;
    er.prompt = prompt;
    er.sampling = p.sampling;
    er.sampling.seed += uint32_t(i);
    er.max_tokens = p.max_tokens >= 0 ? p.max_tokens : int32_t(n_ctx);
    if (p.echo && p.top_logprobs >= 0) er.prompt_logprobs = p.top_logprobs;
    er.prompt_logprobs = std::max(er.prompt_logprobs, p.prompt_logprobs);
    if (p.max_tokens == 0) er.prompt_logprobs = std::max(er.prompt_logprobs, 0);  // echo alone: the prompt, nothing more
    er.stop_ids = eog;
    if (p.ignore_eos) {
      er.stop_ids.clear();
      for (int32_t id : eog) er.sampling.logit_bias.emplace_back(id, -std::numeric_limits<float>::infinity());
    }
    er.top_logprobs = p.top_logprobs;
    if (p.post_sampling_probs) er.post_sampling_probs = p.top_logprobs;
    er.constraint = constraint();
    er.checkpoint = checkpoint;
    auto job = std::make_shared<Job>(ctx, chat, p, opens_reasoning, shape->logprob_entries());
    if (parse_calls) {
      job->tools.emplace(ctx.format.tool_syntax(), job->p.tools);
      for (const std::string& marker : chat::tool_call_control_texts(ctx.format.tool_syntax()))
        if (auto ids = ctx.tok.encode(marker, false, true); ids.size() == 1) job->pipeline.show(ids[0]);
      job->short_call_ids = ctx.format.tool_syntax() == chat::ToolCallSyntax::kMistral;
    }
    job->index = int(i);
    if (i > 0) {
      job->id = jobs->front()->id;
      job->created = jobs->front()->created;
    }
    job->prompt_tokens = int64_t(prompt.size());
    job->echo = echo;
    if (er.prompt_logprobs >= 0) job->prompt_offsets = offsets;
    if (p.return_token_ids) job->prompt_ids = prompt;
    job->stream = ctx.scheduler.submit(std::move(er));
    jobs->push_back(job);
  }
  if (!p.stream) return run_whole(*jobs, res, *shape);
  res.set_header("Cache-Control", "no-cache");
  res.set_chunked_content_provider(
      shape->stream_type(), [jobs, shape](size_t, httplib::DataSink& sink) { return run_stream(*jobs, sink, *shape); },
      [jobs](bool) { cancel(*jobs); });
}

}  // namespace

void handle_generation(GenerationContext& ctx, const httplib::Request& req, httplib::Response& res, bool chat) {
  Json body;
  if (auto e = parse_body(req.body, &body)) return reply_error(res, *e);
  generate(ctx, body, res, chat, std::make_shared<OpenAiShape>());
}

std::optional<ApiError> chat_prompt_size(GenerationContext& ctx, const Json& body, int64_t* n) {
  GenerationParams p;
  if (auto e = parse_generation(body, true, &p, &ctx.grammar_tokens)) return e;
  std::vector<int32_t> prompt;
  bool opens_reasoning = false;
  int64_t checkpoint = -1;
  if (auto e = prompt_tokens(ctx, body, true, p.tools, &prompt, &opens_reasoning, &checkpoint)) return e;
  *n = int64_t(prompt.size());
  return std::nullopt;
}

void handle_translated(GenerationContext& ctx, const Json& body, bool chat, httplib::Response& res, std::unique_ptr<AnswerShape> shape) {
  generate(ctx, body, res, chat, std::move(shape));
}

}  // namespace zinc::server
