#include "server/responses.h"

#include <httplib.h>

#include <algorithm>
#include <cstdlib>
#include <optional>
#include <string>
#include <vector>

namespace zinc::server {
namespace {

// j[key] when it is a string, else `fallback` (a field of the wrong type reads as absent; the
// checks that follow name it).
std::string str(const Json& j, const char* key, const std::string& fallback = "") {
  const auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : fallback;
}

// The text of message content: a string or parts of the given types.
std::optional<ApiError> content_text(const Json& content, const std::string& where, std::string* out) {
  if (content.is_string()) {
    *out = content.get<std::string>();
    return std::nullopt;
  }
  if (!content.is_array()) return bad_request("input", where + ".content must be a string or an array of parts");
  for (size_t k = 0; k < content.size(); ++k) {
    const Json& part = content[k];
    const std::string type = part.is_object() ? str(part, "type") : "";
    if (type == "input_text" || type == "output_text" || type == "text" || type == "summary_text" || type == "reasoning_text") {
      if (!part.contains("text") || !part["text"].is_string()) return bad_request("input", where + ".content[" + std::to_string(k) + "].text must be a string");
      *out += part["text"].get<std::string>();
    } else if (type == "refusal") {
      if (!part.contains("refusal") || !part["refusal"].is_string())
        return bad_request("input", where + ".content[" + std::to_string(k) + "].refusal must be a string");
      *out += part["refusal"].get<std::string>();
    } else {
      return bad_request("input", where + ".content[" + std::to_string(k) + "]: '" + type + "' parts are not supported (zinc serves text models)");
    }
  }
  return std::nullopt;
}

// The assistant message function calls attach to: the last message when it is the assistant's.
Json& assistant_turn(Json& messages) {
  if (messages.empty() || messages.back()["role"] != "assistant") messages.push_back({{"role", "assistant"}, {"content", ""}});
  return messages.back();
}

std::optional<ApiError> add_item(const Json& item, size_t index, Json& messages) {
  const std::string where = "input[" + std::to_string(index) + "]";
  if (!item.is_object()) return bad_request("input", where + " must be an object");
  const std::string type = str(item, "type", item.contains("role") ? "message" : "");
  if (type == "message") {
    std::string role = str(item, "role");
    if (role == "developer") role = "system";
    if (role != "user" && role != "system" && role != "assistant") return bad_request("input", where + ".role must be user, system, developer or assistant");
    std::string text;
    if (auto e = content_text(item.value("content", Json()), where, &text)) return e;
    if (role == "assistant") {
      Json& turn = assistant_turn(messages);
      turn["content"] = turn["content"].get<std::string>() + text;
    } else {
      messages.push_back({{"role", role}, {"content", text}});
    }
  } else if (type == "function_call") {
    for (const char* k : {"call_id", "name", "arguments"})
      if (!item.contains(k) || !item[k].is_string()) return bad_request("input", where + "." + k + " must be a string");
    Json& turn = assistant_turn(messages);
    if (!turn.contains("tool_calls")) turn["tool_calls"] = Json::array();
    turn["tool_calls"].push_back({{"id", item["call_id"]}, {"type", "function"}, {"function", {{"name", item["name"]}, {"arguments", item["arguments"]}}}});
  } else if (type == "function_call_output") {
    if (!item.contains("call_id") || !item["call_id"].is_string()) return bad_request("input", where + ".call_id must be a string");
    std::string output;
    if (auto e = content_text(item.value("output", Json("")), where, &output)) return e;
    messages.push_back({{"role", "tool"}, {"tool_call_id", item["call_id"]}, {"content", output}});
  } else if (type == "reasoning") {
    std::string text;  // earlier reasoning goes back to the template, which may show or drop it
    if (item.contains("content") && !item["content"].is_null())
      if (auto e = content_text(item["content"], where, &text)) return e;
    if (!text.empty()) assistant_turn(messages)["reasoning_content"] = text;
  } else {
    return bad_request("input", where + ": '" + type + "' items are not supported (send message, function_call, function_call_output "
                                "and reasoning items, or previous_response_id for a stored conversation)");
  }
  return std::nullopt;
}

// An input item as GET /v1/responses/{id}/input_items lists it: typed, with an id, message
// content as parts.
Json listed_item(const Json& item) {
  Json it = item;
  const std::string type = str(item, "type", item.contains("role") ? "message" : "");
  it["type"] = type;
  if (type == "message" && it["content"].is_string())
    it["content"] = Json::array({{{"type", str(it, "role") == "assistant" ? "output_text" : "input_text"}, {"text", it["content"]}}});
  if (!it.contains("id")) {
    const char* prefix = type == "message" ? "msg_" : type == "function_call" ? "fc_" : type == "function_call_output" ? "fco_" : "rs_";
    it["id"] = random_id(prefix);
  }
  return it;
}

// What a turn adds to the conversation before its answer: the chat messages without the
// instructions (the previous response's, then this input), and the input as listed items.
struct Turn {
  Json history = Json::array();
  Json input_items = Json::array();
};

ApiError previous_not_found(const std::string& id) {
  return {400, "Previous response with id '" + id + "' not found. (zinc keeps responses in memory, the most recent up to serve's "
               "--responses-store MiB, until it restarts.)",
          "invalid_request_error", "previous_response_id", "previous_response_not_found"};
}

std::optional<ApiError> to_chat(const Json& in, ResponseStore& store, Json* out, Turn* turn) {
  Json& o = *out;
  o = Json::object();
  if (in.contains("conversation") && !in["conversation"].is_null())
    return bad_request("conversation", "'conversation' needs OpenAI's Conversations API, which zinc does not have: use "
                                       "previous_response_id or send the whole conversation in 'input'");
  if (auto prev = in.find("previous_response_id"); prev != in.end() && !prev->is_null()) {
    if (!prev->is_string()) return bad_request("previous_response_id", "'previous_response_id' must be a string");
    auto kept = store.get(prev->get<std::string>());
    if (!kept) return previous_not_found(prev->get<std::string>());
    turn->history = std::move(kept->conversation);
  }
  Json messages = Json::array();
  if (auto i = in.find("instructions"); i != in.end() && !i->is_null()) {
    if (!i->is_string()) return bad_request("instructions", "'instructions' must be a string");
    messages.push_back({{"role", "system"}, {"content", *i}});
  }
  const Json input = in.value("input", Json());
  if (input.is_string()) {
    turn->history.push_back({{"role", "user"}, {"content", input}});
    turn->input_items.push_back(listed_item({{"role", "user"}, {"content", input}}));
  } else if (input.is_array() && !input.empty()) {
    for (size_t i = 0; i < input.size(); ++i) {
      if (auto e = add_item(input[i], i, turn->history)) return e;
      turn->input_items.push_back(listed_item(input[i]));
    }
  } else {
    return bad_request("input", "'input' must be a string or a non-empty array of items");
  }
  if (auto st = in.find("store"); st != in.end() && !st->is_null() && !st->is_boolean())
    return bad_request("store", "'store' must be a boolean");
  for (const Json& m : turn->history) messages.push_back(m);
  o["messages"] = std::move(messages);
  if (auto m = in.find("max_output_tokens"); m != in.end() && !m->is_null()) o["max_tokens"] = *m;
  for (const char* k : {"temperature", "top_p", "parallel_tool_calls", "stream", "seed"})
    if (auto v = in.find(k); v != in.end()) o[k] = *v;
  if (auto t = in.find("tools"); t != in.end() && !t->is_null()) {
    if (!t->is_array()) return bad_request("tools", "'tools' must be an array");
    Json tools = Json::array();
    for (const Json& tool : *t) {
      if (!tool.is_object() || str(tool, "type") != "function" || !tool.contains("name"))
        return bad_request("tools", "only function tools ({\"type\": \"function\", \"name\": ...}) are supported");
      Json f = {{"name", tool["name"]}};
      for (const char* k : {"description", "parameters"})
        if (tool.contains(k) && !tool[k].is_null()) f[k] = tool[k];
      tools.push_back({{"type", "function"}, {"function", f}});
    }
    o["tools"] = std::move(tools);
  }
  if (auto c = in.find("tool_choice"); c != in.end() && !c->is_null()) {
    if (c->is_string()) o["tool_choice"] = *c;
    else if (c->is_object() && str(*c, "type") == "function" && c->contains("name"))
      o["tool_choice"] = {{"type", "function"}, {"function", {{"name", (*c)["name"]}}}};
    else return bad_request("tool_choice", "'tool_choice' must be \"auto\", \"none\", \"required\" or {\"type\": \"function\", \"name\": ...}");
  }
  if (auto t = in.find("text"); t != in.end() && t->is_object() && t->contains("format")) {
    const Json& f = (*t)["format"];
    const std::string type = f.is_object() ? str(f, "type") : "";
    if (type == "json_object") o["response_format"] = {{"type", "json_object"}};
    else if (type == "json_schema")
      o["response_format"] = {{"type", "json_schema"}, {"json_schema", {{"name", str(f, "name", "output")}, {"schema", f.value("schema", Json())}}}};
    else if (type != "text") return bad_request("text", "'text.format' type must be \"text\", \"json_object\" or \"json_schema\"");
  }
  if (auto r = in.find("reasoning"); r != in.end() && r->is_object() && r->contains("effort") && !(*r)["effort"].is_null())
    o["reasoning_effort"] = (*r)["effort"];
  if (o.value("stream", false)) o["stream_options"] = {{"include_usage", true}};
  return std::nullopt;
}

Json usage_of(const Json& u) {
  const int64_t cached = u.contains("prompt_tokens_details") ? u["prompt_tokens_details"].value("cached_tokens", 0) : 0;
  return {{"input_tokens", u.value("prompt_tokens", 0)}, {"input_tokens_details", {{"cached_tokens", cached}}},
          {"output_tokens", u.value("completion_tokens", 0)}, {"output_tokens_details", {{"reasoning_tokens", 0}}},
          {"total_tokens", u.value("total_tokens", 0)}};
}

Json text_part(const std::string& text) { return {{"type", "output_text"}, {"text", text}, {"annotations", Json::array()}}; }
Json reasoning_item(const std::string& id, const std::string& text) {
  return {{"type", "reasoning"}, {"id", id}, {"summary", Json::array()}, {"content", Json::array({{{"type", "reasoning_text"}, {"text", text}}})}};
}
Json message_item(const std::string& id, const std::string& text) {
  return {{"type", "message"}, {"id", id}, {"status", "completed"}, {"role", "assistant"}, {"content", Json::array({text_part(text)})}};
}
Json call_item(const std::string& id, const Json& call, const char* status) {
  return {{"type", "function_call"}, {"id", id}, {"call_id", call["id"]}, {"name", call["function"]["name"]},
          {"arguments", call["function"]["arguments"]}, {"status", status}};
}

class ResponsesShape : public AnswerShape {
 public:
  // With `store` (null: not kept), the finished response is kept there with turn's conversation.
  ResponsesShape(const Json& request, ResponseStore* store, Turn turn) : id_(random_id("resp_")), store_(store), turn_(std::move(turn)) {
    base_ = {{"id", id_}, {"object", "response"}, {"created_at", unix_time()}, {"status", "in_progress"}, {"error", nullptr},
             {"incomplete_details", nullptr}, {"instructions", request.value("instructions", Json())},
             {"max_output_tokens", request.value("max_output_tokens", Json())}, {"model", nullptr}, {"output", Json::array()},
             {"parallel_tool_calls", request.value("parallel_tool_calls", true)},
             {"previous_response_id", request.value("previous_response_id", Json())}, {"store", store != nullptr},
             {"temperature", request.value("temperature", Json())}, {"tool_choice", request.value("tool_choice", Json("auto"))},
             {"tools", request.value("tools", Json::array())}, {"top_p", request.value("top_p", Json())}, {"usage", nullptr}};
  }

  // Errors of the chat fields name the request's own.
  void error(httplib::Response& res, const ApiError& e) const override {
    ApiError renamed = e;
    for (const auto& [chat, own] : {std::pair{"max_tokens", "max_output_tokens"}, std::pair{"response_format", "text"},
                                    std::pair{"messages", "input"}, std::pair{"reasoning_effort", "reasoning"}})
      if (renamed.param == chat) renamed.param = own;
    reply_error(res, renamed);
  }

  Json whole(const Json& completion) const override {
    const Json& choice = completion["choices"][0];
    const Json& msg = choice["message"];
    Json r = base_;
    r["model"] = completion["model"];
    if (msg.contains("reasoning_content")) r["output"].push_back(reasoning_item(random_id("rs_"), msg["reasoning_content"]));
    if (msg["content"].is_string() && !msg["content"].get<std::string>().empty())
      r["output"].push_back(message_item(random_id("msg_"), msg["content"]));
    if (msg.contains("tool_calls"))
      for (const Json& c : msg["tool_calls"]) r["output"].push_back(call_item(random_id("fc_"), c, "completed"));
    finish(r, choice["finish_reason"], completion["usage"]);
    keep(r);
    return r;
  }

  std::string chunk(const Json& c) override {
    std::string out;
    if (c.contains("error")) {
      out += close();
      const std::string message = c["error"].value("message", "");
      out += emit("error", {{"code", "server_error"}, {"message", message}, {"param", nullptr}});
      Json r = snapshot("failed");
      r["error"] = {{"code", "server_error"}, {"message", message}};
      return out + emit("response.failed", {{"response", r}});
    }
    if (!started_) {
      started_ = true;
      model_ = c.value("model", Json());
      out += emit("response.created", {{"response", snapshot("in_progress")}});
      out += emit("response.in_progress", {{"response", snapshot("in_progress")}});
    }
    if (c.contains("usage") && c["usage"].is_object()) {  // the last chunk
      out += close();
      Json r = snapshot("completed");
      finish(r, finish_, c["usage"]);
      keep(r);
      return out + emit(r["status"] == "incomplete" ? "response.incomplete" : "response.completed", {{"response", r}});
    }
    const Json& choice = c["choices"][0];
    const Json& d = choice["delta"];
    if (d.contains("reasoning_content")) out += text(kReasoning, d["reasoning_content"]);
    if (d.contains("content") && d["content"].is_string() && !d["content"].get<std::string>().empty()) out += text(kMessage, d["content"]);
    if (d.contains("tool_calls"))
      for (const Json& call : d["tool_calls"]) {
        out += close();
        const std::string item_id = random_id("fc_");
        const size_t index = output_.size();
        Json added = call_item(item_id, call, "in_progress");
        added["arguments"] = "";
        out += emit("response.output_item.added", {{"output_index", index}, {"item", added}});
        const Json args = call["function"]["arguments"];
        out += emit("response.function_call_arguments.delta", {{"item_id", item_id}, {"output_index", index}, {"delta", args}});
        out += emit("response.function_call_arguments.done", {{"item_id", item_id}, {"output_index", index}, {"arguments", args}});
        output_.push_back(call_item(item_id, call, "completed"));
        out += emit("response.output_item.done", {{"output_index", index}, {"item", output_.back()}});
      }
    if (choice.contains("finish_reason") && choice["finish_reason"].is_string()) finish_ = choice["finish_reason"];
    return out;
  }
  std::string end() override { return ""; }

 private:
  enum Open { kNone, kReasoning, kMessage };

  // The finished response into the store, with the conversation it ends.
  void keep(const Json& response) const {
    if (!store_) return;
    Json conversation = turn_.history;
    const Json& output = response["output"];
    for (size_t i = 0; i < output.size(); ++i) add_item(output[i], i, conversation);
    store_->put(id_, {response, std::move(conversation), turn_.input_items});
  }

  std::string emit(const char* type, Json data) {
    Json e = {{"type", type}, {"sequence_number", seq_++}};
    for (auto& [k, v] : data.items()) e[k] = std::move(v);
    return sse_event(type, e);
  }
  Json snapshot(const char* status) const {
    Json r = base_;
    r["status"] = status;
    r["model"] = model_;
    r["output"] = output_;
    return r;
  }
  static void finish(Json& r, const std::string& finish_reason, const Json& usage) {
    r["status"] = finish_reason == "length" ? "incomplete" : "completed";
    if (finish_reason == "length") r["incomplete_details"] = {{"reason", "max_output_tokens"}};
    r["usage"] = usage_of(usage);
  }
  // Text into the open item of `kind`, opening it (and closing another) first.
  std::string text(Open kind, const Json& delta) {
    std::string out;
    if (open_ != kind) {
      out += close();
      open_ = kind;
      item_id_ = random_id(kind == kReasoning ? "rs_" : "msg_");
      text_.clear();
      const size_t index = output_.size();
      Json item = kind == kReasoning ? Json{{"type", "reasoning"}, {"id", item_id_}, {"summary", Json::array()}, {"content", Json::array()}}
                                     : Json{{"type", "message"}, {"id", item_id_}, {"status", "in_progress"}, {"role", "assistant"},
                                            {"content", Json::array()}};
      out += emit("response.output_item.added", {{"output_index", index}, {"item", item}});
      Json part = kind == kReasoning ? Json{{"type", "reasoning_text"}, {"text", ""}} : text_part("");
      out += emit("response.content_part.added", {{"item_id", item_id_}, {"output_index", index}, {"content_index", 0}, {"part", part}});
    }
    text_ += delta.get<std::string>();
    Json e = {{"item_id", item_id_}, {"output_index", output_.size()}, {"content_index", 0}, {"delta", delta}};
    if (kind == kMessage) e["logprobs"] = Json::array();
    return out + emit(kind == kReasoning ? "response.reasoning_text.delta" : "response.output_text.delta", e);
  }
  std::string close() {
    if (open_ == kNone) return "";
    std::string out;
    const size_t index = output_.size();
    const Json where = {{"item_id", item_id_}, {"output_index", index}, {"content_index", 0}};
    Json done = where, part_done = where;
    done["text"] = text_;
    if (open_ == kReasoning) {
      out += emit("response.reasoning_text.done", done);
      part_done["part"] = {{"type", "reasoning_text"}, {"text", text_}};
      out += emit("response.content_part.done", part_done);
      output_.push_back(reasoning_item(item_id_, text_));
    } else {
      done["logprobs"] = Json::array();
      out += emit("response.output_text.done", done);
      part_done["part"] = text_part(text_);
      out += emit("response.content_part.done", part_done);
      output_.push_back(message_item(item_id_, text_));
    }
    open_ = kNone;
    return out + emit("response.output_item.done", {{"output_index", index}, {"item", output_.back()}});
  }

  std::string id_;
  ResponseStore* store_;
  Turn turn_;
  Json base_, model_;
  Json output_ = Json::array();  // the items done
  bool started_ = false;
  int64_t seq_ = 0;
  Open open_ = kNone;
  std::string item_id_, text_;
  std::string finish_ = "stop";
};

}  // namespace

void handle_responses(GenerationContext& ctx, const httplib::Request& req, httplib::Response& res) {
  Json body, chat;
  Turn turn;
  if (auto e = parse_body(req.body, &body)) return reply_error(res, *e);
  if (auto e = to_chat(body, ctx.responses, &chat, &turn)) return reply_error(res, *e);
  const bool keep = !body.contains("store") || !body["store"].is_boolean() || body["store"].get<bool>();  // null: the default
  ResponseStore* store = keep && ctx.responses.enabled() ? &ctx.responses : nullptr;
  handle_translated(ctx, chat, /*chat=*/true, res, std::make_unique<ResponsesShape>(body, store, std::move(turn)));
}

namespace {

ApiError no_response(const std::string& id) {
  return {404, "No response found with id '" + id + "'.", "invalid_request_error", "", ""};
}

}  // namespace

void handle_stored_response(GenerationContext& ctx, const std::string& id, bool remove, httplib::Response& res) {
  if (remove) {
    if (!ctx.responses.erase(id)) return reply_error(res, no_response(id));
    return res.set_content(dump(Json{{"id", id}, {"object", "response"}, {"deleted", true}}), "application/json");
  }
  auto kept = ctx.responses.get(id);
  if (!kept) return reply_error(res, no_response(id));
  res.set_content(dump(kept->response), "application/json");
}

void handle_input_items(GenerationContext& ctx, const httplib::Request& req, const std::string& id, httplib::Response& res) {
  auto kept = ctx.responses.get(id);
  if (!kept) return reply_error(res, no_response(id));
  int64_t limit = 20;
  if (req.has_param("limit")) {
    const std::string v = req.get_param_value("limit");
    char* end = nullptr;
    limit = std::strtoll(v.c_str(), &end, 10);
    if (v.empty() || *end != '\0' || limit < 1 || limit > 100) return reply_error(res, bad_request("limit", "'limit' must be an integer from 1 to 100"));
  }
  const std::string order = req.has_param("order") ? req.get_param_value("order") : "desc";
  if (order != "asc" && order != "desc") return reply_error(res, bad_request("order", "'order' must be \"asc\" or \"desc\""));
  std::vector<Json> items(kept->input_items.begin(), kept->input_items.end());
  if (order == "desc") std::reverse(items.begin(), items.end());
  size_t start = 0;
  if (req.has_param("after")) {
    const std::string after = req.get_param_value("after");
    auto it = std::find_if(items.begin(), items.end(), [&](const Json& item) { return item.value("id", "") == after; });
    if (it == items.end()) return reply_error(res, bad_request("after", "no item '" + after + "' in the input of response '" + id + "'"));
    start = size_t(it - items.begin()) + 1;
  }
  Json data = Json::array();
  for (size_t i = start; i < items.size() && data.size() < size_t(limit); ++i) data.push_back(items[i]);
  const bool more = start + data.size() < items.size();
  res.set_content(dump(Json{{"object", "list"}, {"data", data}, {"first_id", data.empty() ? Json() : data.front()["id"]},
                            {"last_id", data.empty() ? Json() : data.back()["id"]}, {"has_more", more}}),
                  "application/json");
}

}  // namespace zinc::server
