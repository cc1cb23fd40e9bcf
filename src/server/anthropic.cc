#include "server/anthropic.h"

#include <httplib.h>

#include <optional>


namespace zinc::server {
namespace {

const char* error_type(int status) {
  switch (status) {
    case 401: return "authentication_error";
    case 403: return "permission_error";
    case 404: return "not_found_error";
    case 413: return "request_too_large";
    case 429: return "rate_limit_error";
    case 529: return "overloaded_error";
    default: return status >= 500 ? "api_error" : "invalid_request_error";
  }
}

// The text of a system prompt or a tool result: a string or text blocks.
std::optional<std::string> block_text(const Json& v, const char* field, std::string* error) {
  if (v.is_string()) return v.get<std::string>();
  if (!v.is_array()) {
    *error = std::string("'") + field + "' must be a string or an array of text blocks";
    return std::nullopt;
  }
  std::string text;
  for (const Json& b : v) {
    if (!b.is_object() || b.value("type", "") != "text" || !b.contains("text") || !b["text"].is_string()) {
      *error = std::string("'") + field + "' may hold only text blocks ({\"type\": \"text\", \"text\": ...})";
      return std::nullopt;
    }
    text += (text.empty() ? "" : "\n") + b["text"].get<std::string>();
  }
  return text;
}

// One Anthropic message → OpenAI chat messages appended to `out`.
std::optional<std::string> add_message(const Json& m, size_t index, Json& out) {
  const std::string where = "messages[" + std::to_string(index) + "]";
  if (!m.is_object()) return where + " must be an object";
  const std::string role = m.value("role", "");
  if (role != "user" && role != "assistant") return where + ".role must be \"user\" or \"assistant\"";
  const Json content = m.value("content", Json());
  if (content.is_string()) {
    out.push_back({{"role", role}, {"content", content}});
    return std::nullopt;
  }
  if (!content.is_array()) return where + ".content must be a string or an array of content blocks";
  Json parts = Json::array(), calls = Json::array();
  std::string reasoning;
  for (size_t k = 0; k < content.size(); ++k) {
    const Json& b = content[k];
    const std::string at = where + ".content[" + std::to_string(k) + "]";
    const std::string type = b.is_object() ? b.value("type", "") : "";
    if (type == "text") {
      if (!b.contains("text") || !b["text"].is_string()) return at + ".text must be a string";
      parts.push_back({{"type", "text"}, {"text", b["text"]}});
    } else if (type == "image" || type == "document") {
      return at + ": " + type + " blocks are not supported (zinc serves text models)";
    } else if (type == "thinking" && role == "assistant") {
      if (b.contains("thinking") && b["thinking"].is_string()) reasoning += b["thinking"].get<std::string>();
    } else if (type == "redacted_thinking" && role == "assistant") {
    } else if (type == "tool_use" && role == "assistant") {
      if (!b.contains("id") || !b["id"].is_string() || !b.contains("name") || !b["name"].is_string())
        return at + ": a tool_use block needs a string id and name";
      const Json input = b.value("input", Json::object());
      calls.push_back({{"id", b["id"]}, {"type", "function"}, {"function", {{"name", b["name"]}, {"arguments", dump(input)}}}});
    } else if (type == "tool_result" && role == "user") {
      if (!b.contains("tool_use_id") || !b["tool_use_id"].is_string()) return at + ": a tool_result block needs a string tool_use_id";
      std::string error;
      auto text = block_text(b.value("content", Json("")), "tool_result content", &error);
      if (!text) return at + ": " + error;
      if (b.value("is_error", false)) *text = "Error: " + *text;
      out.push_back({{"role", "tool"}, {"tool_call_id", b["tool_use_id"]}, {"content", *text}});
    } else {
      return at + ": a " + (type.empty() ? std::string("block without a type") : "'" + type + "' block") + " cannot be in a " + role +
             " message";
    }
  }
  if (parts.empty() && calls.empty() && reasoning.empty()) return std::nullopt;  // tool results alone
  Json msg = {{"role", role}, {"content", parts.empty() ? Json("") : parts}};
  if (!calls.empty()) msg["tool_calls"] = calls;
  if (!reasoning.empty()) msg["reasoning_content"] = reasoning;
  out.push_back(std::move(msg));
  return std::nullopt;
}

// An Anthropic request → an OpenAI chat request (the fields both have), or the error.
std::optional<std::string> to_chat(const Json& in, bool need_max_tokens, Json* out) {
  Json& o = *out;
  o = Json::object();
  Json messages = Json::array();
  if (auto s = in.find("system"); s != in.end() && !s->is_null()) {
    std::string error;
    auto text = block_text(*s, "system", &error);
    if (!text) return error;
    messages.push_back({{"role", "system"}, {"content", *text}});
  }
  const Json m = in.value("messages", Json());
  if (!m.is_array() || m.empty()) return "'messages' must be a non-empty array";
  for (size_t i = 0; i < m.size(); ++i)
    if (auto e = add_message(m[i], i, messages)) return e;
  o["messages"] = std::move(messages);
  if (auto mt = in.find("max_tokens"); mt != in.end()) {
    if (!mt->is_number_integer() || *mt < 1) return "'max_tokens' must be a positive integer";
    o["max_tokens"] = *mt;
  } else if (need_max_tokens) {
    return "'max_tokens' is required";
  }
  for (const char* k : {"temperature", "top_p", "top_k", "stream"})
    if (auto v = in.find(k); v != in.end()) o[k] = *v;
  if (auto s = in.find("stop_sequences"); s != in.end() && !s->is_null()) o["stop"] = *s;
  if (auto t = in.find("tools"); t != in.end() && !t->is_null()) {
    if (!t->is_array()) return "'tools' must be an array";
    Json tools = Json::array();
    for (const Json& tool : *t) {
      if (!tool.is_object() || !tool.contains("name") || !tool["name"].is_string() || !tool.contains("input_schema"))
        return "each tool needs a name and an input_schema (server tools such as web search are not supported)";
      Json f = {{"name", tool["name"]}, {"parameters", tool["input_schema"]}};
      if (tool.contains("description")) f["description"] = tool["description"];
      tools.push_back({{"type", "function"}, {"function", f}});
    }
    o["tools"] = std::move(tools);
  }
  if (auto c = in.find("tool_choice"); c != in.end() && !c->is_null()) {
    const std::string type = c->is_object() ? c->value("type", "") : "";
    if (type == "auto") o["tool_choice"] = "auto";
    else if (type == "any") o["tool_choice"] = "required";
    else if (type == "none") o["tool_choice"] = "none";
    else if (type == "tool" && c->contains("name")) o["tool_choice"] = {{"type", "function"}, {"function", {{"name", (*c)["name"]}}}};
    else return "'tool_choice' must be {\"type\": \"auto\" | \"any\" | \"none\"} or {\"type\": \"tool\", \"name\": ...}";
    if (c->value("disable_parallel_tool_use", false)) o["parallel_tool_calls"] = false;
  }
  if (auto t = in.find("thinking"); t != in.end() && !t->is_null()) {
    const std::string type = t->is_object() ? t->value("type", "") : "";
    if (type != "enabled" && type != "disabled") return "'thinking' must be {\"type\": \"enabled\", ...} or {\"type\": \"disabled\"}";
    o["chat_template_kwargs"] = {{"enable_thinking", type == "enabled"}};
  }
  if (o.value("stream", false)) o["stream_options"] = {{"include_usage", true}};
  return std::nullopt;
}

std::string stop_reason(const std::string& finish, const Json& stop_string) {
  if (finish == "length") return "max_tokens";
  if (finish == "tool_calls") return "tool_use";
  return stop_string.is_string() ? "stop_sequence" : "end_turn";
}

Json usage_of(const Json& u) {
  const int64_t prompt = u.value("prompt_tokens", 0), cached = u.contains("prompt_tokens_details") ? u["prompt_tokens_details"].value("cached_tokens", 0) : 0;
  return {{"input_tokens", prompt - cached}, {"cache_creation_input_tokens", 0}, {"cache_read_input_tokens", cached},
          {"output_tokens", u.value("completion_tokens", 0)}};
}

class AnthropicShape : public AnswerShape {
 public:
  void error(httplib::Response& res, const ApiError& e) const override { reply_anthropic_error(res, e.status, e.message); }

  Json whole(const Json& completion) const override {
    const Json& choice = completion["choices"][0];
    const Json& msg = choice["message"];
    Json content = Json::array();
    if (msg.contains("reasoning_content")) content.push_back({{"type", "thinking"}, {"thinking", msg["reasoning_content"]}, {"signature", ""}});
    if (msg["content"].is_string() && !msg["content"].get<std::string>().empty()) content.push_back({{"type", "text"}, {"text", msg["content"]}});
    if (msg.contains("tool_calls"))
      for (const Json& c : msg["tool_calls"])
        content.push_back({{"type", "tool_use"}, {"id", c["id"]}, {"name", c["function"]["name"]}, {"input", call_arguments(c)}});
    const Json stop = choice.value("stop_reason", Json());
    return {{"id", random_id("msg_")}, {"type", "message"}, {"role", "assistant"}, {"model", completion["model"]}, {"content", content},
            {"stop_reason", stop_reason(choice["finish_reason"], stop)}, {"stop_sequence", stop.is_string() ? stop : Json(nullptr)},
            {"usage", usage_of(completion["usage"])}};
  }

  std::string chunk(const Json& c) override {
    std::string out;
    if (c.contains("error")) {
      out += close_block();
      return out + sse_event("error", {{"type", "error"}, {"error", {{"type", "api_error"}, {"message", c["error"].value("message", "")}}}});
    }
    if (!started_) {
      started_ = true;
      out += sse_event("message_start", {{"type", "message_start"},
                                     {"message", {{"id", random_id("msg_")}, {"type", "message"}, {"role", "assistant"}, {"model", c["model"]},
                                                  {"content", Json::array()}, {"stop_reason", nullptr}, {"stop_sequence", nullptr},
                                                  {"usage", {{"input_tokens", 0}, {"output_tokens", 0}}}}}});
    }
    if (c.contains("usage") && c["usage"].is_object()) {  // the last chunk
      out += close_block();
      Json u = usage_of(c["usage"]);
      out += sse_event("message_delta", {{"type", "message_delta"},
                                     {"delta", {{"stop_reason", stop_reason(finish_, stop_)}, {"stop_sequence", stop_.is_string() ? stop_ : Json(nullptr)}}},
                                     {"usage", u}});
      return out + sse_event("message_stop", {{"type", "message_stop"}});
    }
    const Json& choice = c["choices"][0];
    const Json& d = choice["delta"];
    if (d.contains("reasoning_content")) out += delta("thinking", "thinking_delta", "thinking", d["reasoning_content"]);
    if (d.contains("content") && d["content"].is_string() && !d["content"].get<std::string>().empty())
      out += delta("text", "text_delta", "text", d["content"]);
    if (d.contains("tool_calls"))
      for (const Json& call : d["tool_calls"]) {
        out += close_block();
        out += sse_event("content_block_start", {{"type", "content_block_start"}, {"index", index_},
                                             {"content_block", {{"type", "tool_use"}, {"id", call["id"]}, {"name", call["function"]["name"]}, {"input", Json::object()}}}});
        out += sse_event("content_block_delta", {{"type", "content_block_delta"}, {"index", index_},
                                             {"delta", {{"type", "input_json_delta"}, {"partial_json", dump(call_arguments(call))}}}});
        out += sse_event("content_block_stop", {{"type", "content_block_stop"}, {"index", index_++}});
      }
    if (choice.contains("finish_reason") && choice["finish_reason"].is_string()) {
      finish_ = choice["finish_reason"];
      stop_ = choice.value("stop_reason", Json());
    }
    return out;
  }
  std::string end() override { return ""; }

 private:
  // Text into the open block of `type`, opening it (and closing another) first.
  std::string delta(const char* type, const char* delta_type, const char* field, const Json& text) {
    std::string out;
    if (open_ != type) {
      out += close_block();
      open_ = type;
      out += sse_event("content_block_start",
                   {{"type", "content_block_start"}, {"index", index_}, {"content_block", {{"type", type}, {field, ""}}}});
    }
    return out + sse_event("content_block_delta", {{"type", "content_block_delta"}, {"index", index_}, {"delta", {{"type", delta_type}, {field, text}}}});
  }
  std::string close_block() {
    if (open_.empty()) return "";
    std::string out;
    if (open_ == "thinking")
      out += sse_event("content_block_delta", {{"type", "content_block_delta"}, {"index", index_}, {"delta", {{"type", "signature_delta"}, {"signature", ""}}}});
    open_.clear();
    return out + sse_event("content_block_stop", {{"type", "content_block_stop"}, {"index", index_++}});
  }

  bool started_ = false;
  std::string open_;  // the open content block's type ("" none)
  int index_ = 0;     // the next (or open) block's
  std::string finish_ = "stop";
  Json stop_;
};

std::optional<Json> body_of(const httplib::Request& req, httplib::Response& res) {
  Json body;
  if (auto e = parse_body(req.body, &body)) {
    reply_anthropic_error(res, e->status, e->message);
    return std::nullopt;
  }
  return body;
}

}  // namespace

void reply_anthropic_error(httplib::Response& res, int status, const std::string& message) {
  res.status = status;
  res.set_content(dump(Json{{"type", "error"}, {"error", {{"type", error_type(status)}, {"message", message}}}}), "application/json");
}

void handle_messages(GenerationContext& ctx, const httplib::Request& req, httplib::Response& res) {
  auto body = body_of(req, res);
  if (!body) return;
  Json chat;
  if (auto e = to_chat(*body, /*need_max_tokens=*/true, &chat)) return reply_anthropic_error(res, 400, *e);
  handle_translated(ctx, chat, /*chat=*/true, res, std::make_unique<AnthropicShape>());
}

void handle_count_tokens(GenerationContext& ctx, const httplib::Request& req, httplib::Response& res) {
  auto body = body_of(req, res);
  if (!body) return;
  Json chat;
  if (auto e = to_chat(*body, /*need_max_tokens=*/false, &chat)) return reply_anthropic_error(res, 400, *e);
  int64_t n = 0;
  if (auto e = chat_prompt_size(ctx, chat, &n)) return reply_anthropic_error(res, e->status, e->message);
  res.set_content(dump(Json{{"input_tokens", n}}), "application/json");
}

}  // namespace zinc::server
