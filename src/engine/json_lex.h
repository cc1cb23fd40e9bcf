// The lexing the JSON recognisers share (JsonPrefix, SchemaPrefix): numbers and string bodies
// (UTF-8 checked) byte by byte (RFC 8259), and the whitespace allowed between tokens, as llama.cpp's JSON grammar
// allows it: one space, or a newline and up to kMaxIndent spaces or tabs.
#pragma once

#include <cstdint>
#include <string_view>

namespace zinc::engine::json_lex {

inline bool is_space(uint8_t c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }
inline bool is_digit(uint8_t c) { return c >= '0' && c <= '9'; }
inline bool is_hex(uint8_t c) { return is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'); }

enum class Step : uint8_t {
  kFail,   // c cannot come here
  kTaken,  // c continues the token
  kEnded,  // numbers: the number was whole before c, which is not read; strings: c closed it
};

// A number after its first byte (number_start); integers have no fraction or exponent.
class Number {
 public:
  bool start(uint8_t c) {
    if (c == '-') state_ = kMinus;
    else if (c == '0') state_ = kZero;
    else if (is_digit(c)) state_ = kInt;
    else return false;
    return true;
  }
  Step step(uint8_t c, bool integer) {
    switch (state_) {
      case kMinus:
        if (c == '0') state_ = kZero;
        else if (is_digit(c)) state_ = kInt;
        else return Step::kFail;
        return Step::kTaken;
      case kZero:
      case kInt:
      case kFrac:  // digits so far (a fraction's only after kDot); integers stop at their digits
        if (state_ != kZero && is_digit(c)) return Step::kTaken;
        if (!integer && c == '.' && state_ != kFrac) state_ = kDot;
        else if (!integer && (c == 'e' || c == 'E')) state_ = kExp;
        else return Step::kEnded;
        return Step::kTaken;
      case kExp:
        if (c == '+' || c == '-') {
          state_ = kExpSign;
          return Step::kTaken;
        }
        [[fallthrough]];
      case kDot:
      case kExpSign:  // a digit must come
        if (!is_digit(c)) return Step::kFail;
        state_ = state_ == kDot ? kFrac : kExpDigits;
        return Step::kTaken;
      case kExpDigits:
        return is_digit(c) ? Step::kTaken : Step::kEnded;
    }
    return Step::kFail;
  }

  bool operator==(const Number&) const = default;

 private:
  enum : uint8_t { kMinus, kZero, kInt, kDot, kFrac, kExp, kExpSign, kExpDigits } state_ = kInt;
};

// UTF-8 (RFC 3629: no overlong forms, surrogates or code points past U+10FFFF) byte by byte.
class Utf8 {
 public:
  bool between() const { return due_ == 0; }  // not inside a multi-byte sequence
  uint32_t value() const { return value_; }   // the last code point, once between()
  bool step(uint8_t c) {
    if (due_ > 0) {
      if (c < lo_ || c > hi_) return false;
      --due_;
      lo_ = 0x80;
      hi_ = 0xBF;
      value_ = value_ << 6 | (c & 0x3Fu);
      return true;
    }
    value_ = c;
    if (c < 0x80) return true;
    lo_ = 0x80;
    hi_ = 0xBF;
    if (c >= 0xC2 && c <= 0xDF) due_ = 1, value_ = c & 0x1Fu;
    else if (c >= 0xE0 && c <= 0xEF) due_ = 2, value_ = c & 0x0Fu;
    else if (c >= 0xF0 && c <= 0xF4) due_ = 3, value_ = c & 0x07u;
    else return false;
    if (c == 0xE0) lo_ = 0xA0;
    else if (c == 0xED) hi_ = 0x9F;
    else if (c == 0xF0) lo_ = 0x90;
    else if (c == 0xF4) hi_ = 0x8F;
    return true;
  }
  bool operator==(const Utf8&) const = default;

 private:
  uint32_t value_ = 0;
  uint8_t due_ = 0;  // continuation bytes still to come
  uint8_t lo_ = 0x80, hi_ = 0xBF;  // the next one's range
};

// Whether `text` can follow whole UTF-8 sequences: valid UTF-8, the last sequence perhaps
// unfinished (*whole: it is finished).
inline bool utf8_continues(std::string_view text, bool* whole = nullptr) {
  Utf8 u;
  for (char c : text)
    if (!u.step(uint8_t(c))) return false;
  if (whole) *whole = u.between();
  return true;
}
// Whether `text` is whole UTF-8 sequences.
inline bool whole_utf8(std::string_view text) {
  bool whole = false;
  return utf8_continues(text, &whole) && whole;
}

// A string's body after its opening quote, up to and with its closing quote.
class StringBody {
 public:
  // No escape or multi-byte sequence begun: any text without quotes, backslashes and control
  // bytes for which utf8_continues may come.
  bool free() const { return hex_ == 0 && !escape_ && utf8_.between(); }
  // *unit: the character c completes (a code point; a \uXXXX escape's UTF-16 unit), else -1.
  Step step(uint8_t c, int32_t* unit) {
    *unit = -1;
    if (hex_ > 0) {
      if (!is_hex(c)) return Step::kFail;
      unit_ = uint16_t(unit_ << 4 | (is_digit(c) ? c - '0' : (c | 0x20) - 'a' + 10));
      if (--hex_ == 0) *unit = unit_;
      return Step::kTaken;
    }
    if (escape_) {
      escape_ = false;
      constexpr std::string_view kFrom = "\"\\/bfnrt", kTo = "\"\\/\b\f\n\r\t";
      const size_t k = kFrom.find(char(c));
      if (c == 'u') {
        hex_ = 4;
        unit_ = 0;
      } else if (k == std::string_view::npos) {
        return Step::kFail;
      } else {
        *unit = uint8_t(kTo[k]);
      }
      return Step::kTaken;
    }
    if (!utf8_.between()) {
      if (!utf8_.step(c)) return Step::kFail;
      if (utf8_.between()) *unit = int32_t(utf8_.value());
      return Step::kTaken;
    }
    if (c == '"') return Step::kEnded;
    if (c == '\\') {
      escape_ = true;
    } else {
      if (c < 0x20 || !utf8_.step(c)) return Step::kFail;
      if (utf8_.between()) *unit = c;
    }
    return Step::kTaken;
  }
  Step step(uint8_t c) {
    int32_t unit;
    return step(c, &unit);
  }
  bool operator==(const StringBody&) const = default;

 private:
  uint8_t hex_ = 0;  // \u digits still due
  bool escape_ = false;
  uint16_t unit_ = 0;  // the \u escape's value so far
  Utf8 utf8_;
};

// Whitespace between two tokens; reset() at every other byte.
class Spacing {
 public:
  static constexpr int kMaxIndent = 20;
  bool take(uint8_t c) {
    if (c == '\n') {
      if (mode_ != kNone) return false;
      mode_ = kNewline;
      indent_ = 0;
      return true;
    }
    if (mode_ == kNewline) return (c == ' ' || c == '\t') && ++indent_ <= kMaxIndent;
    if (mode_ != kNone || c != ' ') return false;
    mode_ = kOne;
    return true;
  }
  void reset() { mode_ = kNone; }
  bool operator==(const Spacing&) const = default;

 private:
  enum : uint8_t { kNone, kOne, kNewline } mode_ = kNone;
  uint8_t indent_ = 0;
};

}  // namespace zinc::engine::json_lex
