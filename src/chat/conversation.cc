#include "chat/conversation.h"

#include <algorithm>

#include "chat/text.h"
#include "gguf/file.h"
#include "tokenizer/tokenizer.h"

namespace zinc::chat {

const char kChatmlTemplate[] =
    "{%- for message in messages -%}\n"
    "{{- '<|im_start|>' + message.role + '\\n' + message.content + '<|im_end|>\\n' -}}\n"
    "{%- endfor -%}\n"
    "{%- if add_generation_prompt -%}\n"
    "{{- '<|im_start|>assistant\\n' -}}\n"
    "{%- endif -%}\n";

Result<ChatFormat> ChatFormat::from_source(std::string_view source, const tokenizer::Tokenizer& tok, std::string bos_token,
                                           std::string eos_token, bool is_fallback) {
  ZINC_ASSIGN_OR_RETURN(Template t, Template::parse(source));
  ChatFormat f(std::move(t), tok);
  f.source_ = std::string(source);
  f.bos_ = std::move(bos_token);
  f.eos_ = std::move(eos_token);
  f.fallback_ = is_fallback;
  f.tool_syntax_ = detect_tool_call_syntax(source);
  return f;
}

Result<ChatFormat> ChatFormat::create(const gguf::File& file, const tokenizer::Tokenizer& tok,
                                      std::string_view override_source) {
  const auto& v = tok.vocab();
  std::string bos = v.valid_id(tok.bos()) ? std::string(v.text(tok.bos())) : "";
  std::string eos = v.valid_id(tok.eos()) ? std::string(v.text(tok.eos())) : "";
  if (!override_source.empty()) return from_source(override_source, tok, bos, eos);
  ZINC_ASSIGN_OR_RETURN(auto source, file.find_string("tokenizer.chat_template"));
  if (!source) return from_source(kChatmlTemplate, tok, bos, eos, /*is_fallback=*/true);
  auto f = from_source(*source, tok, bos, eos);
  if (!f.ok()) return error("tokenizer.chat_template: %s", f.status().message().c_str());
  return f;
}

namespace {

// OpenAI content parts → one string; null stays null (assistant messages with tool calls).
Status normalize_message(nlohmann::ordered_json& m, size_t index) {
  if (!m.is_object()) return error("messages[%zu] must be an object", index);
  auto role = m.find("role");
  if (role == m.end() || !role->is_string()) return error("messages[%zu] needs a string 'role'", index);
  tool_call_arguments_to_objects(m);
  auto content = m.find("content");
  if (content == m.end() || content->is_null()) {
    m["content"] = "";
    return ok_status();
  }
  if (content->is_string()) return ok_status();
  if (!content->is_array()) return error("messages[%zu].content must be a string or an array of parts", index);
  std::string text;
  for (size_t i = 0; i < content->size(); ++i) {
    const auto& part = (*content)[i];
    if (!part.is_object() || part.value("type", "") != "text" || !part.contains("text") || !part["text"].is_string())
      return error("messages[%zu].content[%zu]: only {\"type\": \"text\", \"text\": ...} parts are supported", index, i);
    text += part["text"].get<std::string>();
  }
  m["content"] = text;
  return ok_status();
}

}  // namespace

Result<std::string> ChatFormat::render(const ChatRequest& request) const {
  if (!request.messages.is_array() || request.messages.empty()) return error("'messages' must be a non-empty array");
  nlohmann::ordered_json ctx = nlohmann::ordered_json::object();
  ctx["messages"] = request.messages;
  for (size_t i = 0; i < ctx["messages"].size(); ++i) ZINC_RETURN_IF_ERROR(normalize_message(ctx["messages"][i], i));
  if (!request.tools.is_null()) {
    if (!request.tools.is_array()) return error("'tools' must be an array");
    if (!request.tools.empty()) ctx["tools"] = request.tools;
  }
  ctx["add_generation_prompt"] = request.add_generation_prompt;
  ctx["bos_token"] = bos_;
  ctx["eos_token"] = eos_;
  if (!request.kwargs.is_null()) {
    if (!request.kwargs.is_object()) return error("'chat_template_kwargs' must be an object");
    for (const auto& [k, v] : request.kwargs.items())
      if (k != "messages") ctx[k] = v;  // the checked messages stay
  }
  return template_.render(ctx);
}

std::vector<int32_t> ChatFormat::tokenize(std::string_view prompt) const {
  const bool adds_bos = tok_->vocab().flags().add_bos && tok_->vocab().valid_id(tok_->bos());
  if (adds_bos && !bos_.empty() && prompt.substr(0, bos_.size()) == bos_) prompt.remove_prefix(bos_.size());
  return tok_->encode(prompt, /*add_special=*/true, /*parse_special=*/true);
}

Result<std::vector<int32_t>> ChatFormat::render_tokens(const ChatRequest& request) const {
  ZINC_ASSIGN_OR_RETURN(std::string text, render(request));
  return tokenize(text);
}

Result<size_t> ChatFormat::history_length(ChatRequest request, std::span<const int32_t> prompt) const {
  request.add_generation_prompt = false;
  ZINC_ASSIGN_OR_RETURN(std::vector<int32_t> history, render_tokens(request));
  return size_t(std::ranges::mismatch(history, prompt).in1 - history.begin());
}

bool prompt_opens_reasoning(std::string_view prompt) {
  const size_t open = prompt.rfind("<think>");
  if (open == std::string_view::npos) return false;
  const size_t close = prompt.rfind("</think>");
  return close == std::string_view::npos || close < open;
}


void ReasoningSplitter::emit(std::string_view text, Delta& d) {
  if (skip_ws_) {
    const size_t first = text.find_first_not_of(" \t\r\n");
    if (first == std::string_view::npos) return;
    text.remove_prefix(first);
    skip_ws_ = false;
  }
  (in_reasoning_ ? d.reasoning : d.content).append(text);
}

ReasoningSplitter::Delta ReasoningSplitter::push(std::string_view text) {
  Delta d;
  pending_.append(text);
  for (;;) {
    const std::string_view tag = in_reasoning_ ? "</think>" : "<think>";
    const size_t at = pending_.find(tag);
    if (at == std::string::npos) break;
    emit(std::string_view(pending_).substr(0, at), d);
    pending_.erase(0, at + tag.size());
    in_reasoning_ = !in_reasoning_;
    skip_ws_ = true;
  }
  const std::string_view tag = in_reasoning_ ? "</think>" : "<think>";
  const size_t hold = text::partial_tail(pending_, tag);
  emit(std::string_view(pending_).substr(0, pending_.size() - hold), d);
  pending_.erase(0, pending_.size() - hold);
  return d;
}

ReasoningSplitter::Delta ReasoningSplitter::flush() {
  Delta d;
  emit(pending_, d);
  pending_.clear();
  return d;
}

StopMatcher::StopMatcher(std::vector<std::string> stops) : stops_(std::move(stops)) {
  std::erase_if(stops_, [](const std::string& s) { return s.empty(); });
}

std::string StopMatcher::push(std::string_view text) {
  if (stopped_) return {};
  pending_.append(text);
  size_t best = std::string::npos;
  for (const auto& s : stops_) {
    const size_t at = pending_.find(s);
    if (at < best) {
      best = at;
      matched_ = s;
    }
  }
  if (best != std::string::npos) {
    stopped_ = true;
    std::string out = pending_.substr(0, best);
    pending_.clear();
    return out;
  }
  size_t hold = 0;
  for (const auto& s : stops_) hold = std::max(hold, text::partial_tail(pending_, s));
  std::string out = pending_.substr(0, pending_.size() - hold);
  pending_.erase(0, pending_.size() - hold);
  return out;
}

std::string StopMatcher::flush() {
  if (stopped_) return {};
  std::string out = std::move(pending_);
  pending_.clear();
  return out;
}

}  // namespace zinc::chat
