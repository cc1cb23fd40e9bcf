// llama.cpp's GBNF grammars (its server's `grammar` field, --grammar-file), parsed and compiled
// for GrammarConstraint. The syntax is llama.cpp's: rules `name ::= alternatives`, one a line
// (`|` and parentheses may continue on later lines), "literals" and [classes] with ranges and
// negation (escapes \t \r \n \\ \" \[ \] \- \xHH \uHHHH \UHHHHHHHH), `.` (any character), rule
// names, groups, and the quantifiers * + ? {m} {m,} {m,n} {,n}; # starts a comment. Characters
// are code points. A grammar needs a `root` rule, defines each rule once, refers only to defined
// rules and is not left-recursive (a rule reachable from itself before a character is read).
//
// Compiled form: every alternative is a run of elements ended by kEnd; a quantifier becomes a
// generated rule (x* is r ::= x r | "", right-recursive, so a matcher that drops finished
// frames keeps its stack flat). Character sets are unions of code point ranges; `bounds`
// partitions the code points into classes no set splits, so a matcher steps on a class.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace zinc::engine {

class Grammar {
 public:
  static constexpr size_t kMaxSource = size_t(1) << 20;     // bytes of grammar text
  static constexpr size_t kMaxElements = size_t(1) << 20;   // after quantifiers are expanded
  static constexpr int kMaxRepetition = 2000;               // m and n of {m,n} (llama.cpp's limit)
  static constexpr int kMaxNesting = 128;                   // parentheses

  static Result<std::shared_ptr<const Grammar>> compile(std::string_view source);

  struct Element {
    enum Kind : uint8_t { kChars, kRef, kEnd } kind = kEnd;
    uint32_t arg = 0;  // kChars: a set in sets; kRef: a rule
  };
  struct Range {
    uint32_t lo, hi;  // inclusive
  };

  std::vector<Element> elements;
  std::vector<std::vector<uint32_t>> alternatives;  // per rule: where each alternative starts in elements
  std::vector<std::string> rule_names;              // a generated rule has its origin's name
  std::vector<std::vector<Range>> sets;             // sorted, disjoint, not adjacent
  uint32_t root = 0;
  // Class c holds the code points [bounds[c], bounds[c + 1]); bounds[0] = 0, the last 0x110000.
  std::vector<uint32_t> bounds;
  std::vector<std::vector<uint64_t>> set_classes;  // per set: a bitmap of the classes it holds

  size_t n_classes() const { return bounds.size() - 1; }
  size_t class_of(uint32_t code_point) const;
  bool holds(uint32_t set, size_t cls) const { return (set_classes[set][cls / 64] >> (cls % 64)) & 1; }
};

}  // namespace zinc::engine
