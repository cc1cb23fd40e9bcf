#include "chat/tool_calls.h"

#include <algorithm>

#include "chat/text.h"
#include "core/json_depth.h"

namespace zinc::chat {

namespace {

using Json = nlohmann::ordered_json;

constexpr std::string_view kOpen = "<tool_call>", kClose = "</tool_call>";
constexpr std::string_view kMistralCalls = "[TOOL_CALLS]", kMistralArgs = "[ARGS]", kMistralId = "[CALL_ID]";
constexpr std::string_view kSpace = " \t\r\n";
constexpr int kMaxDepth = 64;  // generated JSON nested deeper is not a call

bool contains(std::string_view s, std::string_view what) { return s.find(what) != std::string_view::npos; }

std::string_view trim(std::string_view s) {
  const size_t a = s.find_first_not_of(kSpace);
  if (a == std::string_view::npos) return {};
  return s.substr(a, s.find_last_not_of(kSpace) - a + 1);
}

// JSON text → value; discarded when it does not parse (or nests too deep).
Json parse_json(std::string_view text) {
  if (json_depth(text) > kMaxDepth) return Json(Json::value_t::discarded);
  return Json::parse(text, nullptr, /*allow_exceptions=*/false);
}

// A call's arguments (an object, or JSON text of one; absent: none) → the text of an object.
bool arguments_text(const Json& call, std::string* out) {
  auto it = call.find("arguments");
  if (it == call.end()) it = call.find("parameters");
  if (it == call.end() || it->is_null()) {
    *out = "{}";
    return true;
  }
  if (it->is_string()) {
    const Json parsed = parse_json(it->get<std::string>());
    if (!parsed.is_object()) return false;
    *out = parsed.dump();
    return true;
  }
  if (!it->is_object()) return false;
  *out = it->dump();
  return true;
}

bool call_from_json(const Json& j, ToolCall* out) {
  if (!j.is_object()) return false;
  auto name = j.find("name");
  if (name == j.end() || !name->is_string() || name->get<std::string>().empty()) return false;
  out->name = name->get<std::string>();
  return arguments_text(j, &out->arguments);
}

}  // namespace

std::vector<std::string> tool_call_control_texts(ToolCallSyntax syntax) {
  if (syntax == ToolCallSyntax::kMistral) return {std::string(kMistralCalls), std::string(kMistralArgs), std::string(kMistralId)};
  return {};
}

ToolCallSyntax detect_tool_call_syntax(std::string_view source) {
  if (contains(source, kMistralCalls)) return ToolCallSyntax::kMistral;
  if (contains(source, kOpen)) return contains(source, "<function=") ? ToolCallSyntax::kQwenXml : ToolCallSyntax::kHermes;
  if (contains(source, "<|start_header_id|>") && (contains(source, "<|python_tag|>") || contains(source, "\"parameters\": ")))
    return ToolCallSyntax::kLlama3;
  return ToolCallSyntax::kNone;
}

ToolCallParser::ToolCallParser(ToolCallSyntax syntax, Json tools)
    : syntax_(syntax),
      tools_(std::move(tools)),
      state_(syntax == ToolCallSyntax::kLlama3 ? State::kUndecided
             : syntax == ToolCallSyntax::kNone ? State::kPassThrough
                                               : State::kOutside) {}

void ToolCallParser::emit_content(std::string_view text, Delta& d) {
  std::string s = held_space_ + std::string(text);
  const size_t last = s.find_last_not_of(kSpace);  // trailing whitespace waits: it is dropped if a call follows
  const size_t keep = last == std::string::npos ? 0 : last + 1;
  held_space_ = s.substr(keep);
  s.resize(keep);
  d.content += s;
}

ToolCallParser::Delta ToolCallParser::push(std::string_view text) {
  Delta d;
  pending_.append(text);
  for (;;) {
    switch (state_) {
      case State::kPassThrough:
        emit_content(pending_, d);
        pending_.clear();
        return d;
      case State::kOutside: {
        const std::string_view open = open_marker();
        const size_t at = pending_.find(open);
        if (at == std::string::npos) {
          const size_t hold = text::partial_tail(pending_, open);
          emit_content(std::string_view(pending_).substr(0, pending_.size() - hold), d);
          pending_.erase(0, pending_.size() - hold);
          return d;
        }
        emit_content(std::string_view(pending_).substr(0, at), d);
        space_before_call_ = std::move(held_space_);
        held_space_.clear();
        pending_.erase(0, at + open.size());
        state_ = syntax_ == ToolCallSyntax::kMistral ? State::kCapture : State::kInside;  // Mistral's calls run to the end
        break;
      }
      case State::kInside: {
        const size_t at = pending_.find(kClose);
        if (at == std::string::npos) return d;
        const std::string body = pending_.substr(0, at);
        pending_.erase(0, at + kClose.size());
        state_ = State::kOutside;
        finish_call(body, /*closed=*/true, d);
        break;
      }
      case State::kUndecided: {
        const size_t first = pending_.find_first_not_of(kSpace);
        if (first == std::string::npos) return d;
        state_ = pending_[first] == '{' ? State::kCapture : State::kPassThrough;
        break;
      }
      case State::kCapture:
        return d;
    }
  }
}

void ToolCallParser::finish_call(const std::string& body, bool closed, Delta& d) {
  ToolCall call;
  const bool ok = syntax_ == ToolCallSyntax::kHermes ? parse_hermes(body, &call) : parse_qwen_xml(body, &call);
  if (ok) {
    d.calls.push_back(std::move(call));
    ++n_calls_;
    space_before_call_.clear();
    return;
  }
  held_space_ = std::move(space_before_call_);  // not a call: the text stays as it came
  space_before_call_.clear();
  emit_content(std::string(kOpen) + body + (closed ? std::string(kClose) : std::string()), d);
}

ToolCallParser::Delta ToolCallParser::flush() {
  Delta d;
  switch (state_) {
    case State::kInside:
      finish_call(pending_, /*closed=*/false, d);
      break;
    case State::kCapture:
      d.calls = syntax_ == ToolCallSyntax::kMistral ? parse_mistral(pending_) : parse_llama3(pending_);
      n_calls_ += int(d.calls.size());
      if (d.calls.empty() && syntax_ == ToolCallSyntax::kMistral) {  // not calls: the text stays as it came
        held_space_ = std::move(space_before_call_);
        emit_content(std::string(kMistralCalls) + pending_, d);
      } else if (d.calls.empty()) {
        d.content = pending_;
      }
      break;
    case State::kUndecided:
      d.content = pending_;
      break;
    case State::kOutside:
    case State::kPassThrough:
      emit_content(pending_, d);
      break;
  }
  pending_.clear();
  if (n_calls_ == 0) d.content += held_space_;
  held_space_.clear();
  return d;
}

bool ToolCallParser::parse_hermes(std::string_view body, ToolCall* out) const {
  return call_from_json(parse_json(trim(body)), out);
}

std::string ToolCallParser::parameter_type(const std::string& function, const std::string& key) const {
  if (!tools_.is_array()) return "";
  for (const auto& t : tools_) {
    if (!t.is_object() || !t.contains("function") || !t["function"].is_object()) continue;
    const Json& f = t["function"];
    if (f.value("name", "") != function || !f.contains("parameters") || !f["parameters"].is_object()) continue;
    const Json& props = f["parameters"].value("properties", Json::object());
    if (!props.is_object() || !props.contains(key) || !props[key].is_object()) return "";
    const Json& type = props[key].value("type", Json());
    return type.is_string() ? type.get<std::string>() : "";
  }
  return "";
}

bool ToolCallParser::parse_qwen_xml(std::string_view body, ToolCall* out) const {
  body = trim(body);
  constexpr std::string_view kFunction = "<function=", kParameter = "<parameter=", kEndParameter = "</parameter>";
  if (body.substr(0, kFunction.size()) != kFunction) return false;
  const size_t name_end = body.find('>');
  if (name_end == std::string_view::npos) return false;
  out->name = std::string(trim(body.substr(kFunction.size(), name_end - kFunction.size())));
  if (out->name.empty()) return false;
  std::string_view rest = body.substr(name_end + 1);
  const size_t end_function = rest.rfind("</function>");
  if (end_function != std::string_view::npos) {
    if (!trim(rest.substr(end_function + 11)).empty()) return false;
    rest = rest.substr(0, end_function);
  }
  Json args = Json::object();
  for (;;) {
    rest = trim(rest);
    if (rest.empty()) break;
    if (rest.substr(0, kParameter.size()) != kParameter) return false;
    const size_t key_end = rest.find('>');
    if (key_end == std::string_view::npos) return false;
    const std::string key(trim(rest.substr(kParameter.size(), key_end - kParameter.size())));
    rest = rest.substr(key_end + 1);
    size_t value_end = rest.find(kEndParameter);
    std::string_view value = rest.substr(0, value_end);
    rest = value_end == std::string_view::npos ? std::string_view() : rest.substr(value_end + kEndParameter.size());
    if (!value.empty() && value.front() == '\n') value.remove_prefix(1);
    if (!value.empty() && value.back() == '\n') value.remove_suffix(1);
    if (key.empty()) return false;
    Json typed(Json::value_t::discarded);
    if (parameter_type(out->name, key) != "string") typed = parse_json(value);
    args[key] = typed.is_discarded() ? Json(std::string(value)) : typed;
  }
  out->arguments = args.dump();
  return true;
}

std::string_view ToolCallParser::open_marker() const { return syntax_ == ToolCallSyntax::kMistral ? kMistralCalls : kOpen; }

// What follows the first [TOOL_CALLS]: a JSON array of calls, or NAME[ARGS]{...} (NAME[CALL_ID]ID[ARGS]
// in some templates) for each [TOOL_CALLS]. All or nothing.
std::vector<ToolCall> ToolCallParser::parse_mistral(std::string_view text) const {
  std::vector<ToolCall> calls;
  text = trim(text);
  if (!text.empty() && text[0] == '[') {
    const Json list = parse_json(text);
    if (!list.is_array() || list.empty()) return {};
    for (const auto& j : list) {
      ToolCall call;
      if (!call_from_json(j, &call)) return {};
      calls.push_back(std::move(call));
    }
    return calls;
  }
  for (;;) {
    const size_t next = text.find(kMistralCalls);
    std::string_view one = text.substr(0, next);
    const size_t args = one.find(kMistralArgs);
    if (args == std::string_view::npos) return {};
    std::string_view name = one.substr(0, args);
    name = name.substr(0, name.find(kMistralId));
    ToolCall call;
    call.name = std::string(trim(name));
    const Json arguments = parse_json(trim(one.substr(args + kMistralArgs.size())));
    if (call.name.empty() || !arguments.is_object()) return {};
    call.arguments = arguments.dump();
    calls.push_back(std::move(call));
    if (next == std::string_view::npos) return calls;
    text = text.substr(next + kMistralCalls.size());
  }
}

std::vector<ToolCall> ToolCallParser::parse_llama3(std::string_view text) const {
  const Json j = parse_json(trim(text));
  std::vector<ToolCall> calls;
  ToolCall call;
  if (call_from_json(j, &call) && (j.contains("parameters") || j.contains("arguments"))) calls.push_back(std::move(call));
  return calls;
}

void tool_call_arguments_to_objects(Json& message) {
  auto calls = message.find("tool_calls");
  if (calls == message.end() || !calls->is_array()) return;
  for (auto& c : *calls) {
    if (!c.is_object() || !c.contains("function") || !c["function"].is_object()) continue;
    Json& f = c["function"];
    auto args = f.find("arguments");
    if (args == f.end() || !args->is_string()) continue;
    Json parsed = parse_json(args->get<std::string>());
    if (parsed.is_object()) *args = std::move(parsed);
  }
}

}  // namespace zinc::chat
