// Splits a template into tokens with Jinja2's lexer rules under Hugging Face's settings
// (trim_blocks, lstrip_blocks, `-`/`+` whitespace control, one trailing newline dropped).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace zinc::chat {

enum class TokenType : uint8_t {
  kData,           // text outside tags (whitespace control already applied)
  kVariableBegin,  // {{
  kVariableEnd,    // }}
  kBlockBegin,     // {%
  kBlockEnd,       // %}
  kName,
  kString,         // text holds the decoded literal
  kInteger,
  kFloat,
  kOperator,       // text holds the spelling: "+", "//", "==", "(", ...
  kEof,
};

struct Token {
  TokenType type = TokenType::kEof;
  int line = 1;
  std::string text;
  int64_t int_value = 0;
  double float_value = 0;

  bool is_name(std::string_view n) const { return type == TokenType::kName && text == n; }
  bool is_op(std::string_view op) const { return type == TokenType::kOperator && text == op; }
};

// Fails with a TemplateError carrying the line on malformed input (unclosed tag, bad literal).
// The last token is kEof.
std::vector<Token> tokenize(std::string_view source);

// One-line description of a token for syntax errors ("'endfor'", "end of statement block").
std::string describe(const Token& t);

}  // namespace zinc::chat
