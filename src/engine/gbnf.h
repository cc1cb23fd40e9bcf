// llama.cpp's GBNF grammars (its server's `grammar` field, --grammar-file), parsed and compiled
// for GrammarConstraint. The syntax is llama.cpp's: rules `name ::= alternatives`, one a line
// (`|` and parentheses may continue on later lines), "literals" and [classes] with ranges and
// negation (escapes \t \r \n \\ \" \[ \] \- \xHH \uHHHH \UHHHHHHHH), `.` (any character), rule
// names, groups, and the quantifiers * + ? {m} {m,} {m,n} {,n}; # starts a comment. Characters
// are code points. Tokens: `<[id]>` is the token of that id, `<text>` the one token that text
// (brackets included, special tokens parsed) encodes to, and `!` before either any other token;
// a token element is matched by the token drawn, whatever its text (a control token too). A
// grammar needs a `root` rule, defines each rule once, refers only to defined rules and is not
// left-recursive (a rule reachable from itself before a character is read).
//
// Compiled form: every alternative is a run of elements ended by kEnd; a quantifier becomes a
// generated rule (x* is r ::= x r | "", right-recursive, so a matcher that drops finished
// frames keeps its stack flat). Character sets are unions of code point ranges, a token id t
// standing for the symbol kTokenBase + t past the code points; `bounds` partitions the symbols
// into classes no set splits, so a matcher steps on a class.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
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
  static constexpr uint32_t kTokenBase = 0x110000;          // the symbol of token 0
  static constexpr uint32_t kMaxTokens = uint32_t(1) << 24;

  // What token references resolve against: `<[id]>` needs id < n_tokens; `<text>` the token
  // of_text gives (none: the text is not one token). Without it `<text>` is refused.
  struct Tokens {
    int32_t n_tokens = 0;
    std::function<std::optional<int32_t>(std::string_view)> of_text;
  };

  static Result<std::shared_ptr<const Grammar>> compile(std::string_view source, const Tokens* tokens = nullptr);

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
  // Class c holds the symbols [bounds[c], bounds[c + 1]); bounds[0] = 0, the last 0x110000, or
  // with token references kTokenBase + kMaxTokens (then kTokenBase is a bound too).
  std::vector<uint32_t> bounds;
  std::vector<std::vector<uint64_t>> set_classes;  // per set: a bitmap of the classes it holds
  bool has_tokens = false;                         // some element is a token reference

  size_t n_classes() const { return bounds.size() - 1; }
  size_t first_token_class() const { return has_tokens ? class_of(kTokenBase) : n_classes(); }
  size_t class_of(uint32_t code_point) const;
  bool holds(uint32_t set, size_t cls) const { return (set_classes[set][cls / 64] >> (cls % 64)) & 1; }
};

}  // namespace zinc::engine
