// JSON mode (response_format {"type": "json_object"}): generation is held to one JSON object,
// byte by byte, as llama.cpp's JSON grammar holds it; the request ends when the object closes.
//
// JsonPrefix reads bytes and says whether they can still begin a JSON document whose top-level
// value is an object (RFC 8259 values, at most kMaxDepth nested containers). Whitespace between
// tokens is what llama.cpp's JSON grammar allows (json_lex::Spacing), so that generation cannot
// wander off into padding, and none around the object. It is a small trivially copyable value, so the constraint (prefix_constraint.h) tries
// token texts on copies.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "engine/json_lex.h"
#include "engine/prefix_constraint.h"

namespace zinc::engine {

class JsonPrefix {
 public:
  static constexpr int kMaxDepth = 64;

  // False (and the state is then unusable) when the byte cannot continue the document.
  bool feed(uint8_t c);
  bool feed(std::string_view bytes);
  bool complete() const { return expect_ == Expect::kDone && lex_ == Lex::kNone; }
  bool in_free_string() const { return lex_ == Lex::kString && string_.free(); }

 private:
  enum class Expect : uint8_t { kRoot, kValue, kValueOrEnd, kKeyOrEnd, kKey, kColon, kCommaOrEnd, kDone };
  enum class Lex : uint8_t { kNone, kString, kNumber, kLiteral };
  bool structural(uint8_t c);
  void value_done();

  uint64_t objects_ = 0;  // bit i: the container at depth i is an object (else an array)
  uint8_t depth_ = 0;
  Expect expect_ = Expect::kRoot;
  Lex lex_ = Lex::kNone;
  bool key_ = false;      // the string being read is an object key
  uint8_t literal_ = 0;   // kLiteral: which of true, false, null
  uint8_t matched_ = 0;   // kLiteral: its bytes read
  json_lex::StringBody string_;
  json_lex::Number number_;
  json_lex::Spacing space_;
};

using JsonConstraint = PrefixConstraint<JsonPrefix>;

}  // namespace zinc::engine
