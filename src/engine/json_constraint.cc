#include "engine/json_constraint.h"

#include <algorithm>
#include <limits>

namespace zinc::engine {

namespace {

using namespace json_lex;

constexpr std::string_view kLiterals[] = {"true", "false", "null"};

}  // namespace

void JsonPrefix::value_done() { expect_ = depth_ == 0 ? Expect::kDone : Expect::kCommaOrEnd; }

bool JsonPrefix::structural(uint8_t c) {
  if (is_space(c)) return expect_ != Expect::kRoot && expect_ != Expect::kDone && space_.take(c);
  space_.reset();
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
        string_ = StringBody();
        key_ = false;
      } else if (number_.start(c)) {
        lex_ = Lex::kNumber;
      } else if (c == 't' || c == 'f' || c == 'n') {
        lex_ = Lex::kLiteral;
        literal_ = c == 't' ? 0 : c == 'f' ? 1 : 2;
        matched_ = 1;
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
      string_ = StringBody();
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
    case Lex::kString: {
      const Step s = string_.step(c);
      if (s == Step::kEnded) {
        lex_ = Lex::kNone;
        if (key_) expect_ = Expect::kColon;
        else value_done();
      }
      return s != Step::kFail;
    }
    case Lex::kNumber: {
      const Step s = number_.step(c, /*integer=*/false);
      if (s != Step::kEnded) return s == Step::kTaken;
      lex_ = Lex::kNone;  // a whole number ends before c
      value_done();
      return structural(c);
    }
    case Lex::kLiteral: {
      const std::string_view word = kLiterals[literal_];
      if (c != uint8_t(word[matched_])) return false;
      if (++matched_ == word.size()) {
        lex_ = Lex::kNone;
        value_done();
      }
      return true;
    }
  }
  return false;
}

bool JsonPrefix::feed(std::string_view bytes) {
  for (char c : bytes)
    if (!feed(uint8_t(c))) return false;
  return true;
}

}  // namespace zinc::engine
