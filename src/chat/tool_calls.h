// Tool calls in generated text, as llama.cpp's server and Ollama return them: the syntax a chat
// template teaches its model (found in the template's source), and a streaming filter that takes
// the calls out of the content. Text that does not parse as a call stays content, verbatim.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

namespace zinc::chat {

enum class ToolCallSyntax {
  kNone,    // the template shows no tool-call syntax zinc reads: calls stay in the content
  kHermes,  // <tool_call>{"name": ..., "arguments": {...}}</tool_call>, any number (Qwen2.5, Qwen3, Hermes 3)
  kQwenXml, // <tool_call><function=NAME><parameter=KEY>VALUE</parameter>...</function></tool_call> (Qwen3-Coder, Qwen3.5)
  kLlama3,  // the whole answer is one {"name": ..., "parameters": {...}} object (Llama 3.1-3.3)
  kMistral, // [TOOL_CALLS] then a JSON array of {"name", "arguments"} (Mistral Nemo), or
            // NAME[ARGS]{...} after each [TOOL_CALLS] (Ministral 3, Magistral, Devstral): to the end
};
// The control tokens a syntax writes its calls with, which the text must then show ([TOOL_CALLS],
// [ARGS], [CALL_ID] for kMistral; none for the others).
std::vector<std::string> tool_call_control_texts(ToolCallSyntax syntax);
ToolCallSyntax detect_tool_call_syntax(std::string_view template_source);

struct ToolCall {
  std::string name;
  std::string arguments;  // the text of a JSON object, as OpenAI's API carries it
};

class ToolCallParser {
 public:
  // tools: the request's tool list; kQwenXml reads each parameter's schema type from it (a
  // "string" parameter keeps its text, others are read as JSON where they parse).
  ToolCallParser(ToolCallSyntax syntax, nlohmann::ordered_json tools);

  struct Delta {
    std::string content;
    std::vector<ToolCall> calls;
  };
  Delta push(std::string_view text);
  Delta flush();  // end of generation: calls left open are parsed as they are
  bool found_calls() const { return n_calls_ > 0; }

 private:
  enum class State { kOutside, kInside, kUndecided, kCapture, kPassThrough };
  void emit_content(std::string_view text, Delta& d);
  void finish_call(const std::string& body, bool closed, Delta& d);
  std::vector<ToolCall> parse_llama3(std::string_view text) const;
  bool parse_hermes(std::string_view body, ToolCall* out) const;
  bool parse_qwen_xml(std::string_view body, ToolCall* out) const;
  std::vector<ToolCall> parse_mistral(std::string_view text) const;
  std::string_view open_marker() const;
  std::string parameter_type(const std::string& function, const std::string& key) const;

  ToolCallSyntax syntax_;
  nlohmann::ordered_json tools_;
  State state_;
  std::string pending_;            // text not yet emitted or parsed
  std::string held_space_;         // trailing whitespace of the content: dropped before a call and at
                                   // the end of an answer with calls, shown if text follows
  std::string space_before_call_;  // what held_space_ was when a call opened
  int n_calls_ = 0;
};

// OpenAI's assistant messages carry tool_calls[].function.arguments as JSON text, while chat
// templates index into (or tojson) an object, as llama.cpp passes them: text that parses as a
// JSON object becomes that object.
void tool_call_arguments_to_objects(nlohmann::ordered_json& message);

}  // namespace zinc::chat
