// A regular expression compiled to a DFA over code points, for JSON Schema's "pattern" (and the
// formats written as patterns). The syntax is ECMA-262's without what a DFA cannot hold or JSON
// Schema does not use: literals and escapes (\d \w \s and their negations, \t \n \r \f \v \0,
// \xHH, \uHHHH, identity escapes), classes with ranges and negation, '.', groups ((...), (?:...),
// (?<name>...)), '|', and the quantifiers * + ? {n} {n,} {n,m} (lazy forms match the same
// strings). Backreferences, lookaround, \b and \p{...} are refused. As JSON Schema reads a pattern,
// it matches anywhere in the string unless a branch is anchored with ^ at its start or $ at its
// end.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace zinc::engine {

class Regex {
 public:
  static constexpr uint16_t kDead = 0xFFFF;  // no string continuing from here matches
  static constexpr int kMaxNfaStates = 4096;
  static constexpr int kMaxDfaStates = 4096;
  static constexpr size_t kMaxTable = size_t(1) << 22;  // DFA states x character classes
  static constexpr size_t kMaxWork = size_t(1) << 24;   // NFA states visited while building

  // *budget: NFA states the build may still visit (a schema's patterns share one), reduced by
  // what this one took; past it the pattern is refused as too large.
  static Result<Regex> compile(std::string_view pattern, size_t* budget = nullptr);

  uint16_t start() const { return 0; }
  uint16_t step(uint16_t state, uint32_t code_point) const;
  bool accepts(uint16_t state) const { return state != kDead && accepting_[state]; }

 private:
  std::vector<uint32_t> bounds_;  // class a holds the code points [bounds_[a], bounds_[a + 1])
  size_t n_classes_ = 0;
  std::vector<uint16_t> next_;    // [state * n_classes_ + class]
  std::vector<uint8_t> accepting_;
};

}  // namespace zinc::engine
