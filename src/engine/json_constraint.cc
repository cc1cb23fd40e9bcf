#include "engine/json_constraint.h"

#include <algorithm>
#include <limits>

namespace zinc::engine {

namespace {

constexpr std::string_view kLiterals[] = {"true", "false", "null"};

bool is_space(uint8_t c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }
bool is_digit(uint8_t c) { return c >= '0' && c <= '9'; }
bool is_hex(uint8_t c) { return is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'); }

}  // namespace

void JsonPrefix::value_done() { expect_ = depth_ == 0 ? Expect::kDone : Expect::kCommaOrEnd; }

// A byte after a number's digits: continues the number, or ends it (then read as structure).
bool JsonPrefix::number(uint8_t c) {
  switch (lex_) {
    case Lex::kMinus:
      if (c == '0') lex_ = Lex::kZero;
      else if (is_digit(c)) lex_ = Lex::kInt;
      else return false;
      return true;
    case Lex::kZero:
    case Lex::kInt:
      if (lex_ == Lex::kInt && is_digit(c)) return true;
      if (c == '.') lex_ = Lex::kDot;
      else if (c == 'e' || c == 'E') lex_ = Lex::kExp;
      else break;
      return true;
    case Lex::kDot:
      if (!is_digit(c)) return false;
      lex_ = Lex::kFrac;
      return true;
    case Lex::kFrac:
      if (is_digit(c)) return true;
      if (c == 'e' || c == 'E') {
        lex_ = Lex::kExp;
        return true;
      }
      break;
    case Lex::kExp:
      if (c == '+' || c == '-') lex_ = Lex::kExpSign;
      else if (is_digit(c)) lex_ = Lex::kExpDigits;
      else return false;
      return true;
    case Lex::kExpSign:
      if (!is_digit(c)) return false;
      lex_ = Lex::kExpDigits;
      return true;
    case Lex::kExpDigits:
      if (is_digit(c)) return true;
      break;
    default:
      return false;
  }
  lex_ = Lex::kNone;  // a complete number ends before c
  value_done();
  return structural(c);
}

bool JsonPrefix::structural(uint8_t c) {
  if (is_space(c)) {  // between tokens: one space, or a newline and an indent (nothing before the root)
    if (expect_ == Expect::kRoot || expect_ == Expect::kDone || c == '\r') return false;
    if (c == '\n') {
      if (space_ != Space::kNone) return false;
      space_ = Space::kNewline;
      indent_ = 0;
      return true;
    }
    if (space_ == Space::kNewline) return ++indent_ <= kMaxIndent;
    if (space_ != Space::kNone || c != ' ') return false;
    space_ = Space::kOne;
    return true;
  }
  space_ = Space::kNone;
  auto top_is_object = [&] { return (objects_ >> (depth_ - 1) & 1u) != 0; };
  auto open = [&](uint8_t kind) {
    if (depth_ == kMaxDepth) return false;
    const uint64_t bit = uint64_t(1) << depth_++;
    objects_ = kind == '{' ? objects_ | bit : objects_ & ~bit;
    expect_ = kind == '{' ? Expect::kKeyOrEnd : Expect::kValueOrEnd;
    return true;
  };
  auto close = [&](uint8_t kind) {
    if (depth_ == 0 || top_is_object() != (kind == '{')) return false;
    --depth_;
    value_done();
    return true;
  };
  switch (expect_) {
    case Expect::kRoot:
      return c == '{' && open('{');
    case Expect::kValueOrEnd:
      if (c == ']') return close('[');
      [[fallthrough]];
    case Expect::kValue:
      if (c == '{' || c == '[') return open(c);
      if (c == '"') {
        lex_ = Lex::kString;
        key_ = false;
      } else if (c == '-') {
        lex_ = Lex::kMinus;
      } else if (c == '0') {
        lex_ = Lex::kZero;
      } else if (is_digit(c)) {
        lex_ = Lex::kInt;
      } else if (c == 't' || c == 'f' || c == 'n') {
        lex_ = Lex::kLiteral;
        literal_ = c == 't' ? 0 : c == 'f' ? 1 : 2;
        pending_ = 1;
      } else {
        return false;
      }
      return true;
    case Expect::kKeyOrEnd:
      if (c == '}') return close('{');
      [[fallthrough]];
    case Expect::kKey:
      if (c != '"') return false;
      lex_ = Lex::kString;
      key_ = true;
      return true;
    case Expect::kColon:
      if (c != ':') return false;
      expect_ = Expect::kValue;
      return true;
    case Expect::kCommaOrEnd:
      if (c == ',') {
        expect_ = top_is_object() ? Expect::kKey : Expect::kValue;
        return true;
      }
      if (c != '}' && c != ']') return false;
      return close(c == '}' ? '{' : '[');
    case Expect::kDone:
      return false;
  }
  return false;
}

bool JsonPrefix::feed(uint8_t c) {
  switch (lex_) {
    case Lex::kNone:
      return structural(c);
    case Lex::kString:
      if (c == '"') {
        lex_ = Lex::kNone;
        if (key_) expect_ = Expect::kColon;
        else value_done();
      } else if (c == '\\') {
        lex_ = Lex::kEscape;
      } else if (c < 0x20) {
        return false;
      }
      return true;
    case Lex::kEscape:
      if (c == 'u') {
        lex_ = Lex::kHex;
        pending_ = 4;
        return true;
      }
      if (std::string_view("\"\\/bfnrt").find(char(c)) == std::string_view::npos) return false;
      lex_ = Lex::kString;
      return true;
    case Lex::kHex:
      if (!is_hex(c)) return false;
      if (--pending_ == 0) lex_ = Lex::kString;
      return true;
    case Lex::kLiteral: {
      const std::string_view word = kLiterals[literal_];
      if (c != uint8_t(word[pending_])) return false;
      if (++pending_ == word.size()) {
        lex_ = Lex::kNone;
        value_done();
      }
      return true;
    }
    default:
      return number(c);
  }
}

bool JsonPrefix::feed(std::string_view bytes) {
  for (char c : bytes)
    if (!feed(uint8_t(c))) return false;
  return true;
}

}  // namespace zinc::engine
