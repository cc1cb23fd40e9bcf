#include "server/ollama.h"

#include <httplib.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <optional>

#include "server/embeddings.h"

namespace zinc::server {

void reply_ollama_error(httplib::Response& res, int status, const std::string& message) {
  res.status = status;
  res.set_content(dump(Json{{"error", message}}), "application/json");
}

namespace {

// Whether `name` (as Ollama's clients send it, perhaps with ":latest") is the served model.
bool serves(const GenerationContext& ctx, const std::string& name) {
  return name == ctx.options.model_name || name == ctx.options.model_name + ":latest";
}

using Clock = std::chrono::steady_clock;

std::string rfc3339_now() {
  const auto now = std::chrono::system_clock::now();
  const std::time_t t = std::chrono::system_clock::to_time_t(now);
  std::tm tm{};
  gmtime_r(&t, &tm);
  const long nanos = long(std::chrono::duration_cast<std::chrono::nanoseconds>(now.time_since_epoch()).count() % 1000000000);
  char buf[64];
  std::snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02d.%09ldZ", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour,
                tm.tm_min, tm.tm_sec, nanos);
  return buf;
}

// Ollama's tool calls carry arguments as an object; OpenAI's as JSON text, with ids.
Json openai_calls(const Json& calls) {
  Json out = Json::array();
  for (size_t i = 0; i < calls.size(); ++i) {
    const Json f = calls[i].value("function", Json::object());
    out.push_back({{"id", calls[i].value("id", "call_" + std::to_string(i))}, {"type", "function"},
                   {"function", {{"name", f.value("name", "")}, {"arguments", dump(f.value("arguments", Json::object()))}}}});
  }
  return out;
}
Json ollama_call(const Json& call) { return {{"function", {{"name", call["function"]["name"]}, {"arguments", call_arguments(call)}}}}; }

// An Ollama request → OpenAI's chat or completion fields, or the error.
std::optional<std::string> translate(const Json& in, bool chat, bool* as_chat, Json* out) {
  Json& o = *out;
  o = Json::object();
  *as_chat = chat;
  if (chat) {
    const Json m = in.value("messages", Json());
    if (!m.is_array() || m.empty()) return "'messages' must be a non-empty array";
    Json messages = Json::array();
    for (size_t i = 0; i < m.size(); ++i) {
      const Json& msg = m[i];
      if (!msg.is_object() || !msg.contains("role")) return "messages[" + std::to_string(i) + "] needs a role";
      if (msg.contains("images") && msg["images"].is_array() && !msg["images"].empty())
        return "messages[" + std::to_string(i) + "]: images are not supported (zinc serves text models)";
      Json c = {{"role", msg["role"]}, {"content", msg.value("content", "")}};
      if (msg.contains("thinking") && msg["thinking"].is_string()) c["reasoning_content"] = msg["thinking"];
      if (msg.contains("tool_calls") && msg["tool_calls"].is_array()) c["tool_calls"] = openai_calls(msg["tool_calls"]);
      if (msg.contains("tool_name")) c["name"] = msg["tool_name"];
      messages.push_back(std::move(c));
    }
    o["messages"] = std::move(messages);
    if (in.contains("tools") && !in["tools"].is_null()) o["tools"] = in["tools"];
  } else {
    if (!in.contains("prompt") || !in["prompt"].is_string()) return "'prompt' must be a string";
    if (in.contains("images") && in["images"].is_array() && !in["images"].empty()) return "images are not supported (zinc serves text models)";
    if (in.contains("template") && !in["template"].is_null() && in["template"] != "")
      return "'template' is not supported: zinc uses the model's chat template (zinc serve --chat-template-file to change it)";
    const Json suffix = in.value("suffix", Json());
    if (!suffix.is_null() && !suffix.is_string()) return "'suffix' must be a string";
    if (suffix.is_string() && !suffix.get<std::string>().empty()) {  // fill in the middle (completions' suffix)
      o["prompt"] = in["prompt"];
      o["suffix"] = suffix;
    } else if (in.value("raw", false)) {
      o["prompt"] = in["prompt"];
    } else {  // the prompt as a user turn of the model's template
      *as_chat = true;
      Json messages = Json::array();
      if (in.contains("system") && in["system"].is_string()) messages.push_back({{"role", "system"}, {"content", in["system"]}});
      messages.push_back({{"role", "user"}, {"content", in["prompt"]}});
      o["messages"] = std::move(messages);
    }
  }
  const Json opts = in.value("options", Json::object());
  if (!opts.is_object()) return "'options' must be an object";
  for (const char* k : {"temperature", "top_p", "top_k", "min_p", "seed", "repeat_penalty", "presence_penalty", "frequency_penalty", "stop",
                        "repeat_last_n", "typical_p", "mirostat", "mirostat_tau", "mirostat_eta"})
    if (opts.contains(k)) o[k] = opts[k];
  if (opts.contains("num_predict") && opts["num_predict"].is_number_integer() && opts["num_predict"].get<int64_t>() > 0)
    o["max_tokens"] = opts["num_predict"];
  if (auto f = in.find("format"); f != in.end() && !f->is_null()) {
    if (*f == "json") o["response_format"] = {{"type", "json_object"}};
    else if (f->is_object()) o["response_format"] = {{"type", "json_schema"}, {"json_schema", {{"name", "format"}, {"schema", *f}}}};
    else if (*f != "") return "'format' must be \"json\" or a JSON schema";
  }
  if (auto t = in.find("think"); t != in.end() && !t->is_null()) {
    if (t->is_boolean()) o["chat_template_kwargs"] = {{"enable_thinking", *t}};
    else if (t->is_string()) o["reasoning_effort"] = *t;
    else return "'think' must be true, false, or \"low\", \"medium\" or \"high\"";
  }
  const bool stream = in.value("stream", true);  // Ollama streams unless told not to
  o["stream"] = stream;
  if (stream) o["stream_options"] = {{"include_usage", true}};
  return std::nullopt;
}

class OllamaShape : public AnswerShape {
 public:
  OllamaShape(std::string model, bool chat_api) : model_(std::move(model)), chat_api_(chat_api), start_(Clock::now()) {}

  void error(httplib::Response& res, const ApiError& e) const override { reply_ollama_error(res, e.status, e.message); }

  Json whole(const Json& completion) const override {
    const Json& choice = completion["choices"][0];
    Json r = head();
    if (choice.contains("message")) {
      const Json& msg = choice["message"];
      put(r, msg["content"].is_string() ? msg["content"].get<std::string>() : "", msg.value("reasoning_content", ""));
      if (msg.contains("tool_calls"))
        for (const Json& c : msg["tool_calls"]) r["message"]["tool_calls"].push_back(ollama_call(c));
    } else {
      put(r, choice.value("text", ""), "");
    }
    finish(r, choice.value("finish_reason", "stop"), completion["usage"], completion.value("timings", Json()));
    return r;
  }

  std::string chunk(const Json& c) override {
    if (c.contains("error")) return dump(Json{{"error", c["error"].value("message", "")}}) + "\n";
    if (c.contains("usage") && c["usage"].is_object()) {
      Json r = head();
      put(r, "", "");
      finish(r, finish_, c["usage"], c.value("timings", Json()));
      return dump(r) + "\n";
    }
    const Json& choice = c["choices"][0];
    if (choice.contains("finish_reason") && choice["finish_reason"].is_string()) finish_ = choice["finish_reason"];
    std::string content, thinking;
    Json calls = Json::array();
    if (choice.contains("delta")) {
      const Json& d = choice["delta"];
      if (d.contains("content") && d["content"].is_string()) content = d["content"];
      if (d.contains("reasoning_content")) thinking = d["reasoning_content"];
      if (d.contains("tool_calls"))
        for (const Json& call : d["tool_calls"]) calls.push_back(ollama_call(call));
    } else {
      content = choice.value("text", "");
    }
    if (content.empty() && thinking.empty() && calls.empty()) return "";
    Json r = head();
    put(r, content, thinking);
    if (!calls.empty()) r["message"]["tool_calls"] = calls;
    r["done"] = false;
    return dump(r) + "\n";
  }
  std::string end() override { return ""; }
  const char* stream_type() const override { return "application/x-ndjson"; }

 private:
  Json head() const { return {{"model", model_}, {"created_at", rfc3339_now()}}; }
  void put(Json& r, const std::string& content, const std::string& thinking) const {
    if (chat_api_) {
      r["message"] = {{"role", "assistant"}, {"content", content}};
      if (!thinking.empty()) r["message"]["thinking"] = thinking;
    } else {
      r["response"] = content;
      if (!thinking.empty()) r["thinking"] = thinking;
    }
  }
  // Counts from the usage, durations from the generation's timings (ms).
  void finish(Json& r, const std::string& reason, const Json& usage, const Json& timings) const {
    const auto ns = [&](const char* key) { return timings.is_object() ? int64_t(timings.value(key, 0.0) * 1e6) : int64_t(0); };
    r["done"] = true;
    r["done_reason"] = reason == "length" ? "length" : "stop";
    r["total_duration"] = std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - start_).count();
    r["load_duration"] = 0;
    r["prompt_eval_count"] = usage.value("prompt_tokens", 0);
    r["prompt_eval_duration"] = ns("prompt_ms");
    r["eval_count"] = usage.value("completion_tokens", 0);
    r["eval_duration"] = ns("predicted_ms");
  }

  std::string model_;
  bool chat_api_;
  Clock::time_point start_;
  std::string finish_ = "stop";
};

Json details(const ModelCard& card) {
  char size[32];
  if (card.parameters >= 1000000000) std::snprintf(size, sizeof size, "%.1fB", double(card.parameters) / 1e9);
  else std::snprintf(size, sizeof size, "%.1fM", double(card.parameters) / 1e6);
  return {{"parent_model", ""}, {"format", "gguf"}, {"family", card.family}, {"families", Json::array({card.family})},
          {"parameter_size", size}, {"quantization_level", card.quantization}};
}

}  // namespace

void handle_ollama_generation(GenerationContext& ctx, const httplib::Request& req, httplib::Response& res, bool chat) {
  Json body, translated;
  if (auto e = parse_body(req.body, &body)) return reply_ollama_error(res, e->status, e->message);
  bool as_chat = chat;
  if (auto e = translate(body, chat, &as_chat, &translated)) return reply_ollama_error(res, 400, *e);
  const std::string model = body.value("model", ctx.options.model_name);
  handle_translated(ctx, translated, as_chat, res, std::make_unique<OllamaShape>(model.empty() ? ctx.options.model_name : model, chat));
}

void handle_ollama_tags(GenerationContext& ctx, httplib::Response& res) {
  const ModelCard& card = ctx.options.card;
  const Json m = {{"name", ctx.options.model_name}, {"model", ctx.options.model_name}, {"modified_at", rfc3339_now()},
                  {"size", card.file_bytes}, {"digest", ""}, {"details", details(card)}};
  res.set_content(dump(Json{{"models", Json::array({m})}}), "application/json");
}

void handle_ollama_ps(GenerationContext& ctx, httplib::Response& res) {
  const ModelCard& card = ctx.options.card;
  // Loaded for as long as the server runs: Ollama's answer for keep_alive -1 is a far date too.
  const Json m = {{"name", ctx.options.model_name}, {"model", ctx.options.model_name}, {"size", card.file_bytes},
                  {"digest", ""}, {"details", details(card)}, {"expires_at", "9999-12-31T23:59:59Z"},
                  {"size_vram", card.on_gpu ? card.file_bytes : 0}, {"context_length", ctx.scheduler.options().n_ctx}};
  res.set_content(dump(Json{{"models", Json::array({m})}}), "application/json");
}

namespace {

constexpr size_t kMaxEmbedInputs = 2048;

// The embedding of `text` cut to the context (truncate) or the error; with dims > 0 only its
// first dims values, scaled back to length 1 (as Ollama does).
std::optional<std::string> embed_text(GenerationContext& ctx, const std::string& text, bool truncate, int64_t dims,
                                      std::vector<float>* out, int64_t* n_tokens) {
  std::vector<int32_t> tokens = ctx.tok.encode(text, /*add_special=*/true, /*parse_special=*/true);
  if (tokens.empty()) return "an input has no tokens";
  const int64_t n_ctx = ctx.scheduler.options().n_ctx;
  if (int64_t(tokens.size()) > n_ctx) {
    if (!truncate)
      return "an input has " + std::to_string(tokens.size()) + " tokens, more than the context's " + std::to_string(n_ctx) +
             " (set \"truncate\" to cut it)";
    tokens.resize(size_t(n_ctx));
  }
  Result<std::vector<float>> e = embed_tokens(ctx, tokens);
  if (!e.ok()) return "embedding: " + e.status().message();
  *out = std::move(*e);
  if (dims > 0 && dims < int64_t(out->size())) {
    out->resize(size_t(dims));
    double n2 = 0;
    for (float v : *out) n2 += double(v) * v;
    if (n2 > 0)
      for (float& v : *out) v = float(v / std::sqrt(n2));
  }
  *n_tokens += int64_t(tokens.size());
  return std::nullopt;
}

}  // namespace

void handle_ollama_embed(GenerationContext& ctx, const httplib::Request& req, httplib::Response& res) {
  const auto start = Clock::now();
  Json body;
  if (auto e = parse_body(req.body, &body)) return reply_ollama_error(res, e->status, e->message);
  std::vector<std::string> texts;
  const Json input = body.value("input", Json());
  const std::string shapes = "'input' must be a string or an array of up to " + std::to_string(kMaxEmbedInputs) + " strings";
  if (input.is_string()) {
    texts.push_back(input.get<std::string>());
  } else if (input.is_array() && input.size() <= kMaxEmbedInputs) {
    for (const Json& item : input) {
      if (!item.is_string()) return reply_ollama_error(res, 400, shapes);
      texts.push_back(item.get<std::string>());
    }
  } else if (!input.is_null()) {
    return reply_ollama_error(res, 400, shapes);
  }
  const Json truncate = body.value("truncate", Json(true));
  if (!truncate.is_boolean()) return reply_ollama_error(res, 400, "'truncate' must be true or false");
  const int64_t n_embd = ctx.scheduler.embedding_size();
  int64_t dims = 0;
  if (auto d = body.find("dimensions"); d != body.end() && !d->is_null()) {
    if (!d->is_number_integer() || d->get<int64_t>() < 1 || d->get<int64_t>() > n_embd)
      return reply_ollama_error(res, 400, "'dimensions' must be an integer from 1 to the model's " + std::to_string(n_embd));
    dims = d->get<int64_t>();
  }
  if (auto o = body.find("options"); o != body.end() && !o->is_null() && !o->is_object())
    return reply_ollama_error(res, 400, "'options' must be an object");
  Json embeddings = Json::array();
  int64_t n_tokens = 0;
  for (const std::string& text : texts) {
    std::vector<float> v;
    if (auto e = embed_text(ctx, text, truncate.get<bool>(), dims, &v, &n_tokens))
      return reply_ollama_error(res, e->rfind("embedding:", 0) == 0 ? 503 : 400, *e);
    embeddings.push_back(std::move(v));
  }
  const int64_t ns = std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - start).count();
  const std::string model = body.value("model", ctx.options.model_name);
  res.set_content(dump(Json{{"model", model.empty() ? ctx.options.model_name : model}, {"embeddings", embeddings},
                            {"total_duration", ns}, {"load_duration", 0}, {"prompt_eval_count", n_tokens}}),
                  "application/json");
}

void handle_ollama_embeddings(GenerationContext& ctx, const httplib::Request& req, httplib::Response& res) {
  Json body;
  if (auto e = parse_body(req.body, &body)) return reply_ollama_error(res, e->status, e->message);
  const Json prompt = body.value("prompt", Json());
  if (!prompt.is_string()) return reply_ollama_error(res, 400, "'prompt' must be a string");
  if (prompt.get<std::string>().empty()) return res.set_content(dump(Json{{"embedding", Json::array()}}), "application/json");
  std::vector<float> v;
  int64_t n_tokens = 0;
  if (auto e = embed_text(ctx, prompt.get<std::string>(), /*truncate=*/true, 0, &v, &n_tokens))
    return reply_ollama_error(res, e->rfind("embedding:", 0) == 0 ? 503 : 400, *e);
  res.set_content(dump(Json{{"embedding", v}}), "application/json");
}

void handle_ollama_show(GenerationContext& ctx, const httplib::Request& req, httplib::Response& res) {
  Json body;
  if (auto e = parse_body(req.body, &body)) return reply_ollama_error(res, e->status, e->message);
  const std::string name = body.value("model", body.value("name", ""));
  if (!serves(ctx, name))
    return reply_ollama_error(res, 404, "model '" + name + "' not found (this server has '" + ctx.options.model_name + "')");
  const ModelCard& card = ctx.options.card;
  Json info = {{"general.architecture", card.family}, {"general.parameter_count", card.parameters}};
  if (card.context_length > 0) info[card.family + ".context_length"] = card.context_length;
  Json capabilities = Json::array({"completion"});
  if (ctx.format.tool_syntax() != chat::ToolCallSyntax::kNone) capabilities.push_back("tools");
  res.set_content(dump(Json{{"modelfile", ""}, {"parameters", ""}, {"template", ""}, {"details", details(card)}, {"model_info", info},
                            {"capabilities", capabilities}, {"modified_at", rfc3339_now()}}),
                  "application/json");
}

void handle_ollama_pull(GenerationContext& ctx, const httplib::Request& req, httplib::Response& res) {
  Json body;
  if (auto e = parse_body(req.body, &body)) return reply_ollama_error(res, e->status, e->message);
  const std::string name = body.value("model", body.value("name", ""));
  if (!serves(ctx, name))
    return reply_ollama_error(res, 404, "model '" + name + "' is not here, and zinc does not download models: it serves '" +
                                            ctx.options.model_name + "', loaded from a GGUF file at start");
  const std::string done = dump(Json{{"status", "success"}});
  if (body.value("stream", true)) res.set_content(done + "\n", "application/x-ndjson");
  else res.set_content(done, "application/json");
}

void handle_ollama_unsupported(GenerationContext& ctx, const std::string& what, httplib::Response& res) {
  reply_ollama_error(res, 501, "zinc serves one model, '" + ctx.options.model_name + "', loaded from a GGUF file at start: " + what +
                                   " is not supported");
}

}  // namespace zinc::server
