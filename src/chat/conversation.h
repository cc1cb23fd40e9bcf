// From a chat (OpenAI messages, tools, template kwargs) to prompt tokens, and from generated text
// back to the parts a chat client shows.
//
// ChatFormat renders the model's tokenizer.chat_template (or an override). A model without a
// template falls back to ChatML, as llama.cpp does; `is_fallback()` says so and callers mention it.
// BOS as llama.cpp: when the tokenizer adds BOS itself and the rendering starts with the BOS text,
// that text is dropped before tokenizing, so the prompt never has two.
//
// ReasoningSplitter and StopMatcher are streaming filters over generated text: they hold back the
// few bytes that may be the start of a tag or stop string and never emit part of one.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "chat/template.h"
#include "chat/tool_calls.h"
#include "core/status.h"

namespace zinc::gguf {
class File;
}
namespace zinc::tokenizer {
class Tokenizer;
}

namespace zinc::chat {

// The ChatML template llama.cpp falls back to.
extern const char kChatmlTemplate[];

struct ChatRequest {
  nlohmann::ordered_json messages = nlohmann::ordered_json::array();  // [{role, content, ...}]
  nlohmann::ordered_json tools;                                      // null or an array
  nlohmann::ordered_json kwargs = nlohmann::ordered_json::object();  // chat_template_kwargs (enable_thinking ...)
  bool add_generation_prompt = true;
};

class ChatFormat {
 public:
  // The template of `file` (tokenizer.chat_template), or `override_source` when not empty, or
  // ChatML. The tokenizer is borrowed and must outlive the format.
  static Result<ChatFormat> create(const gguf::File& file, const tokenizer::Tokenizer& tok,
                                   std::string_view override_source = "");
  // From parts (tests): bos/eos are the token texts.
  static Result<ChatFormat> from_source(std::string_view source, const tokenizer::Tokenizer& tok, std::string bos_token,
                                        std::string eos_token, bool is_fallback = false);

  bool is_fallback() const { return fallback_; }
  const std::string& source() const { return source_; }  // the template's text
  const std::string& bos_token() const { return bos_; }
  const std::string& eos_token() const { return eos_; }
  // How the template's model writes tool calls (detect_tool_call_syntax on its source).
  ToolCallSyntax tool_syntax() const { return tool_syntax_; }
  // The prompt text. Message contents may be strings or arrays of {type: "text", text} parts
  // (joined); other part types and malformed messages are errors naming the message index.
  // Tool calls' arguments given as JSON text reach the template as objects.
  Result<std::string> render(const ChatRequest& request) const;
  // Prompt text → ids (special-token texts become their ids; BOS per the header note).
  std::vector<int32_t> tokenize(std::string_view prompt) const;
  Result<std::vector<int32_t>> render_tokens(const ChatRequest& request) const;
  // How many leading tokens of `prompt` (the request's tokens) its messages alone account for:
  // the request rendered without the generation prompt, as far as it agrees with `prompt`. The
  // conversation's next turn starts with these tokens.
  Result<size_t> history_length(ChatRequest request, std::span<const int32_t> prompt) const;

 private:
  ChatFormat(Template t, const tokenizer::Tokenizer& tok) : template_(std::move(t)), tok_(&tok) {}
  Template template_;
  const tokenizer::Tokenizer* tok_;
  std::string source_, bos_, eos_;
  bool fallback_ = false;
  ToolCallSyntax tool_syntax_ = ToolCallSyntax::kNone;
};

// Whether a prompt ends inside an open <think> block (a template that starts the reasoning).
bool prompt_opens_reasoning(std::string_view prompt);

// Splits streamed text: inside <think>…</think> → reasoning, the rest → content. The newline
// after <think> and the whitespace after </think> are dropped.
class ReasoningSplitter {
 public:
  struct Delta {
    std::string reasoning, content;
  };
  explicit ReasoningSplitter(bool start_in_reasoning = false) : in_reasoning_(start_in_reasoning), skip_ws_(start_in_reasoning) {}
  Delta push(std::string_view text);
  Delta flush();  // end of stream: whatever was held back
  bool in_reasoning() const { return in_reasoning_; }

 private:
  void emit(std::string_view text, Delta& d);
  std::string pending_;
  bool in_reasoning_;
  bool skip_ws_;  // drop whitespace at the start of the next part
};

// Finds stop strings in streamed text. push() returns the text that is safe to show: everything
// before a stop string, holding back any tail that could start one.
class StopMatcher {
 public:
  explicit StopMatcher(std::vector<std::string> stops);
  std::string push(std::string_view text);
  std::string flush();  // end of stream without a stop: the held-back tail
  bool stopped() const { return stopped_; }
  const std::string& matched() const { return matched_; }  // the stop string found

 private:
  std::vector<std::string> stops_;
  std::string pending_;
  bool stopped_ = false;
  std::string matched_;
};

}  // namespace zinc::chat
