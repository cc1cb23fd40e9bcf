#include "engine/gbnf.h"

#include <algorithm>
#include <map>

namespace zinc::engine {
namespace {

using Range = Grammar::Range;
constexpr uint32_t kMaxCodePoint = 0x10FFFF;

struct Item {
  bool ref;
  uint32_t arg;  // a set, or a rule
};
using Sequence = std::vector<Item>;

struct Rule {
  std::string name;  // a generated rule's is its origin's
  std::vector<Sequence> alternatives;
  bool defined = false;
};

bool is_word_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '_';
}

// Sorted, disjoint, adjacent ranges merged.
std::vector<Range> normalize(std::vector<Range> r) {
  std::sort(r.begin(), r.end(), [](const Range& a, const Range& b) { return a.lo < b.lo; });
  std::vector<Range> out;
  for (const Range& x : r) {
    if (!out.empty() && x.lo <= out.back().hi + 1) out.back().hi = std::max(out.back().hi, x.hi);
    else out.push_back(x);
  }
  return out;
}

std::vector<Range> complement(const std::vector<Range>& r) {
  std::vector<Range> out;
  uint32_t next = 0;
  for (const Range& x : r) {
    if (x.lo > next) out.push_back({next, x.lo - 1});
    next = x.hi + 1;
  }
  if (next <= kMaxCodePoint) out.push_back({next, kMaxCodePoint});
  return out;
}

class Parser {
 public:
  Parser(std::string_view source, const Grammar::Tokens* tokens) : s_(source), tokens_(tokens) {}

  Status parse() {
    skip_space(true);
    while (pos_ < s_.size()) {
      ZINC_RETURN_IF_ERROR(parse_rule());
      skip_space(true);
    }
    return ok_status();
  }

  std::vector<Rule> rules;
  std::vector<std::vector<Range>> sets;
  size_t n_items = 0;
  bool has_tokens = false;

  uint32_t rule_id(const std::string& name) {
    auto [it, added] = ids_.try_emplace(name, uint32_t(rules.size()));
    if (added) rules.push_back({name, {}, false});
    return it->second;
  }

 private:
  Status fail(const std::string& what) const {
    const int line = 1 + int(std::count(s_.begin(), s_.begin() + long(std::min(pos_, s_.size())), '\n'));
    return error("grammar line %d: %s", line, what.c_str());
  }
  bool at(char c) const { return pos_ < s_.size() && s_[pos_] == c; }

  void skip_space(bool newlines) {
    while (pos_ < s_.size()) {
      const char c = s_[pos_];
      if (c == ' ' || c == '\t') {
        ++pos_;
      } else if (c == '#') {
        while (pos_ < s_.size() && s_[pos_] != '\n' && s_[pos_] != '\r') ++pos_;
      } else if ((c == '\n' || c == '\r') && newlines) {
        ++pos_;
      } else {
        break;
      }
    }
  }

  std::string parse_name() {
    const size_t start = pos_;
    while (pos_ < s_.size() && is_word_char(s_[pos_])) ++pos_;
    return std::string(s_.substr(start, pos_ - start));
  }

  Status parse_rule() {
    const std::string name = parse_name();
    if (name.empty()) return fail("expected a rule name");
    skip_space(false);
    if (s_.substr(pos_, 3) != "::=") return fail("expected '::=' after rule name '" + name + "'");
    pos_ += 3;
    skip_space(true);
    const uint32_t id = rule_id(name);
    if (rules[id].defined) return fail("rule '" + name + "' is defined twice");
    rules[id].defined = true;
    ZINC_ASSIGN_OR_RETURN(std::vector<Sequence> alternatives, parse_alternatives(name, false));
    rules[id].alternatives = std::move(alternatives);
    skip_space(false);
    if (at('\r')) ++pos_;
    if (at('\n')) ++pos_;
    else if (pos_ < s_.size()) return fail("expected the end of the line after rule '" + name + "'");
    return ok_status();
  }

  Result<std::vector<Sequence>> parse_alternatives(const std::string& name, bool nested) {
    std::vector<Sequence> out;
    ZINC_ASSIGN_OR_RETURN(Sequence first, parse_sequence(name, nested));
    out.push_back(std::move(first));
    while (at('|')) {
      ++pos_;
      skip_space(true);
      ZINC_ASSIGN_OR_RETURN(Sequence next, parse_sequence(name, nested));
      out.push_back(std::move(next));
    }
    return out;
  }

  Result<Sequence> parse_sequence(const std::string& name, bool nested) {
    Sequence seq;
    while (pos_ < s_.size()) {
      const size_t symbol = seq.size();  // where the item a quantifier repeats begins
      const char c = s_[pos_];
      if (c == '"') {
        const size_t open = pos_++;
        while (!at('"')) {
          if (pos_ >= s_.size()) return (pos_ = open, fail("unterminated literal"));
          ZINC_ASSIGN_OR_RETURN(uint32_t cp, parse_char());
          seq.push_back({false, set_of({{cp, cp}})});
        }
        ++pos_;
      } else if (c == '[') {
        ZINC_ASSIGN_OR_RETURN(uint32_t set, parse_class());
        seq.push_back({false, set});
      } else if (c == '.') {
        ++pos_;
        seq.push_back({false, set_of({{0, kMaxCodePoint}})});
      } else if (c == '<' || (c == '!' && pos_ + 1 < s_.size() && s_[pos_ + 1] == '<')) {
        ZINC_ASSIGN_OR_RETURN(uint32_t set, parse_token());
        seq.push_back({false, set});
      } else if (is_word_char(c)) {
        seq.push_back({true, rule_id(parse_name())});
      } else if (c == '(') {
        if (++depth_ > Grammar::kMaxNesting) return fail("parentheses nest too deep");
        ++pos_;
        skip_space(true);
        ZINC_ASSIGN_OR_RETURN(std::vector<Sequence> group, parse_alternatives(name, true));
        if (!at(')')) return fail("expected ')'");
        ++pos_;
        --depth_;
        if (group.size() == 1) seq.insert(seq.end(), group[0].begin(), group[0].end());
        else seq.push_back({true, add_rule(name, std::move(group))});
      } else {
        break;
      }
      skip_space(nested);
      while (at('*') || at('+') || at('?') || at('{')) {
        if (symbol == seq.size()) return fail("a quantifier needs something before it");
        ZINC_RETURN_IF_ERROR(quantify(name, seq, symbol));
        skip_space(nested);
      }
      if ((n_items += seq.size() - symbol) > Grammar::kMaxElements) return fail("the grammar is too large");
    }
    return seq;
  }

  // Replaces seq[symbol...] by what the quantifier at pos_ makes of it.
  Status quantify(const std::string& name, Sequence& seq, size_t symbol) {
    const char op = s_[pos_++];
    Item x = seq[symbol];
    if (seq.size() - symbol > 1) x = {true, add_rule(name, {Sequence(seq.begin() + long(symbol), seq.end())})};
    seq.resize(symbol);
    int min = 0, max = -1;  // max -1: no bound
    if (op == '+') min = 1;
    if (op == '?') max = 1;
    if (op == '{') {
      skip_space(true);
      auto number = [&](int* out) -> Status {
        int v = 0;
        bool any = false;
        while (pos_ < s_.size() && s_[pos_] >= '0' && s_[pos_] <= '9') {
          v = v * 10 + (s_[pos_++] - '0');
          any = true;
          if (v > Grammar::kMaxRepetition) return fail("a repetition count is over " + std::to_string(Grammar::kMaxRepetition));
        }
        if (any) *out = v;
        skip_space(true);
        return ok_status();
      };
      ZINC_RETURN_IF_ERROR(number(&min));
      if (at(',')) {
        ++pos_;
        skip_space(true);
        ZINC_RETURN_IF_ERROR(number(&max));
      } else {
        max = min;
      }
      if (!at('}')) return fail("expected '}' after a repetition count");
      ++pos_;
      if (max >= 0 && max < min) return fail("a repetition {m,n} needs m <= n");
    }
    if ((n_items += size_t(std::max(min, max)) + 2) > Grammar::kMaxElements) return fail("the grammar is too large");
    for (int i = 0; i < min; ++i) seq.push_back(x);
    if (max < 0) {  // r ::= x r | ""
      const uint32_t r = add_rule(name, {});
      rules[r].alternatives = {{x, {true, r}}, {}};
      seq.push_back({true, r});
    } else if (max > min) {  // o_k ::= x o_(k-1) | "", o_1 ::= x | ""
      uint32_t inner = add_rule(name, {{x}, {}});
      for (int k = 2; k <= max - min; ++k) inner = add_rule(name, {{x, {true, inner}}, {}});
      seq.push_back({true, inner});
    }
    return ok_status();
  }

  uint32_t add_rule(const std::string& name, std::vector<Sequence> alternatives) {
    rules.push_back({name, std::move(alternatives), true});
    return uint32_t(rules.size() - 1);
  }

  uint32_t set_of(std::vector<Range> ranges) {
    std::vector<uint64_t> key;
    for (const Range& r : ranges) key.push_back(uint64_t(r.lo) << 32 | r.hi);
    auto [it, added] = set_ids_.try_emplace(std::move(key), uint32_t(sets.size()));
    if (added) sets.push_back(std::move(ranges));
    return it->second;
  }

  Result<uint32_t> parse_class() {
    const size_t open = pos_++;
    const bool negated = at('^');
    if (negated) ++pos_;
    std::vector<Range> ranges;
    while (!at(']')) {
      if (pos_ >= s_.size()) return (pos_ = open, fail("unterminated character class"));
      ZINC_ASSIGN_OR_RETURN(uint32_t lo, parse_char());
      uint32_t hi = lo;
      if (at('-') && pos_ + 1 < s_.size() && s_[pos_ + 1] != ']') {
        ++pos_;
        ZINC_ASSIGN_OR_RETURN(hi, parse_char());
        if (hi < lo) return fail("a character range runs backwards");
      }
      ranges.push_back({lo, hi});
    }
    ++pos_;
    ranges = normalize(std::move(ranges));
    if (negated) ranges = complement(ranges);
    if (ranges.empty()) return fail("a character class matches nothing");
    return set_of(std::move(ranges));
  }

  // `<[id]>`, `<text>` or either after `!`: the set of that token's symbol, or of every other's.
  Result<uint32_t> parse_token() {
    const bool negated = at('!');
    if (negated) ++pos_;
    const size_t open = pos_++;
    uint32_t id = 0;
    if (at('[')) {
      ++pos_;
      const size_t digits = pos_;
      while (pos_ < s_.size() && s_[pos_] >= '0' && s_[pos_] <= '9') {
        id = id * 10 + uint32_t(s_[pos_++] - '0');
        if (id >= Grammar::kMaxTokens) return fail("a token id is over " + std::to_string(Grammar::kMaxTokens - 1));
      }
      if (pos_ == digits || !at(']') || pos_ + 1 >= s_.size() || s_[pos_ + 1] != '>')
        return (pos_ = open, fail("a token id is written <[digits]>"));
      pos_ += 2;
      if (tokens_ && id >= uint32_t(tokens_->n_tokens))
        return fail("token id " + std::to_string(id) + " is not in the vocabulary (" + std::to_string(tokens_->n_tokens) + " tokens)");
    } else {
      while (pos_ < s_.size() && s_[pos_] != '>' && s_[pos_] != '\n') ++pos_;
      if (!at('>')) return (pos_ = open, fail("unterminated token: '<' needs a '>' on its line"));
      const std::string_view text = s_.substr(open, ++pos_ - open);
      if (!tokens_ || !tokens_->of_text) return fail("token " + std::string(text) + " needs a model's vocabulary");
      const std::optional<int32_t> token = tokens_->of_text(text);
      if (!token || *token < 0) return fail("token " + std::string(text) + " is not one token of the vocabulary");
      id = uint32_t(*token);
    }
    has_tokens = true;
    const uint32_t symbol = Grammar::kTokenBase + id, last = Grammar::kTokenBase + Grammar::kMaxTokens - 1;
    if (!negated) return set_of({{symbol, symbol}});
    std::vector<Range> others;
    if (symbol > Grammar::kTokenBase) others.push_back({Grammar::kTokenBase, symbol - 1});
    if (symbol < last) others.push_back({symbol + 1, last});
    return set_of(std::move(others));
  }

  // One character of a literal or class: an escape or a UTF-8 sequence.
  Result<uint32_t> parse_char() {
    const uint8_t c = uint8_t(s_[pos_]);
    if (c == '\\') {
      if (pos_ + 1 >= s_.size()) return fail("a backslash ends the grammar");
      const char e = s_[pos_ + 1];
      pos_ += 2;
      switch (e) {
        case 'n': return uint32_t('\n');
        case 'r': return uint32_t('\r');
        case 't': return uint32_t('\t');
        case '\\': case '"': case '[': case ']': case '-': case '\'': case '/': return uint32_t(uint8_t(e));
        case 'x': return hex(2);
        case 'u': return hex(4);
        case 'U': return hex(8);
        default: return fail(std::string("unknown escape \\") + e);
      }
    }
    int n = c < 0x80 ? 1 : c >= 0xC2 && c <= 0xDF ? 2 : c >= 0xE0 && c <= 0xEF ? 3 : c >= 0xF0 && c <= 0xF4 ? 4 : 0;
    if (n == 0 || pos_ + size_t(n) > s_.size()) return fail("the grammar is not valid UTF-8");
    uint32_t cp = n == 1 ? c : n == 2 ? c & 0x1F : n == 3 ? c & 0x0F : c & 0x07;
    for (int i = 1; i < n; ++i) {
      const uint8_t b = uint8_t(s_[pos_ + size_t(i)]);
      if ((b & 0xC0) != 0x80) return fail("the grammar is not valid UTF-8");
      cp = cp << 6 | (b & 0x3F);
    }
    static constexpr uint32_t kMin[] = {0, 0, 0x80, 0x800, 0x10000};
    if (cp < kMin[n] || cp > kMaxCodePoint || (cp >= 0xD800 && cp <= 0xDFFF)) return fail("the grammar is not valid UTF-8");
    pos_ += size_t(n);
    return cp;
  }

  Result<uint32_t> hex(int digits) {
    uint32_t v = 0;
    for (int i = 0; i < digits; ++i, ++pos_) {
      const char h = pos_ < s_.size() ? s_[pos_] : '\0';
      const int d = h >= '0' && h <= '9' ? h - '0' : h >= 'a' && h <= 'f' ? h - 'a' + 10 : h >= 'A' && h <= 'F' ? h - 'A' + 10 : -1;
      if (d < 0) return fail("expected " + std::to_string(digits) + " hex digits in an escape");
      v = v << 4 | uint32_t(d);
    }
    if (v > kMaxCodePoint) return fail("an escape names no character");
    return v;
  }

  std::string_view s_;
  const Grammar::Tokens* tokens_;
  size_t pos_ = 0;
  int depth_ = 0;
  std::map<std::string, uint32_t> ids_;
  std::map<std::vector<uint64_t>, uint32_t> set_ids_;  // ranges packed as lo << 32 | hi
};

// A rule that can reach itself before reading a character, through a call with more to match
// after it, would stack calls without end. Through calls in last place only (x?* and the like) it
// cannot: those return straight to their caller, and a matcher skips a call it has made already.
Status check_left_recursion(const std::vector<Rule>& rules) {
  const size_t n = rules.size();
  std::vector<uint8_t> nullable(n, 0);
  for (bool changed = true; changed;) {
    changed = false;
    for (size_t r = 0; r < n; ++r) {
      if (nullable[r]) continue;
      for (const Sequence& alt : rules[r].alternatives)
        if (std::all_of(alt.begin(), alt.end(), [&](const Item& i) { return i.ref && nullable[i.arg]; })) {
          nullable[r] = changed = true;
          break;
        }
    }
  }
  struct Edge {
    uint32_t to;
    bool tail;  // the call is the alternative's last item
  };
  std::vector<std::vector<Edge>> first(n);  // calls rule r may make before a character
  std::vector<std::vector<uint32_t>> back(n);
  for (size_t r = 0; r < n; ++r)
    for (const Sequence& alt : rules[r].alternatives)
      for (size_t k = 0; k < alt.size() && alt[k].ref; ++k) {
        first[r].push_back({alt[k].arg, k + 1 == alt.size()});
        back[alt[k].arg].push_back(uint32_t(r));
        if (!nullable[alt[k].arg]) break;
      }
  // Strongly connected components (Kosaraju, iteratively): a call that is not in last place
  // between rules of one component is a left recursion.
  std::vector<uint32_t> order;
  std::vector<uint8_t> seen(n, 0);
  for (size_t s = 0; s < n; ++s) {
    if (seen[s]) continue;
    std::vector<std::pair<uint32_t, size_t>> stack{{uint32_t(s), 0}};
    seen[s] = 1;
    while (!stack.empty()) {
      auto& [r, next] = stack.back();
      if (next == first[r].size()) {
        order.push_back(r);
        stack.pop_back();
        continue;
      }
      const uint32_t to = first[r][next++].to;
      if (!seen[to]) {
        seen[to] = 1;
        stack.push_back({to, 0});
      }
    }
  }
  constexpr uint32_t kNone = ~uint32_t(0);
  std::vector<uint32_t> component(n, kNone);
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    if (component[*it] != kNone) continue;
    std::vector<uint32_t> stack{*it};
    component[*it] = *it;
    while (!stack.empty()) {
      const uint32_t r = stack.back();
      stack.pop_back();
      for (uint32_t from : back[r])
        if (component[from] == kNone) {
          component[from] = *it;
          stack.push_back(from);
        }
    }
  }
  for (size_t r = 0; r < n; ++r)
    for (const Edge& e : first[r])
      if (!e.tail && component[e.to] == component[r])
        return error("grammar: rule '%s' is left-recursive (it can reach itself before reading a character)",
                     rules[r].name.c_str());
  return ok_status();
}

}  // namespace

size_t Grammar::class_of(uint32_t code_point) const {
  return size_t(std::upper_bound(bounds.begin(), bounds.end(), code_point) - bounds.begin()) - 1;
}

Result<std::shared_ptr<const Grammar>> Grammar::compile(std::string_view source, const Tokens* tokens) {
  if (source.size() > kMaxSource) return error("grammar: over %zu bytes", kMaxSource);
  Parser p(source, tokens);
  ZINC_RETURN_IF_ERROR(p.parse());
  for (const Rule& r : p.rules)
    if (!r.defined) return error("grammar: rule '%s' is used but not defined", r.name.c_str());
  const uint32_t root = p.rule_id("root");
  if (!p.rules[root].defined) return error("grammar: there is no 'root' rule");
  ZINC_RETURN_IF_ERROR(check_left_recursion(p.rules));

  auto g = std::make_shared<Grammar>();
  g->root = root;
  g->alternatives.resize(p.rules.size());
  for (size_t r = 0; r < p.rules.size(); ++r) {
    g->rule_names.push_back(p.rules[r].name);
    for (const Sequence& alt : p.rules[r].alternatives) {
      g->alternatives[r].push_back(uint32_t(g->elements.size()));
      for (const Item& i : alt) g->elements.push_back({i.ref ? Element::kRef : Element::kChars, i.arg});
      g->elements.push_back({Element::kEnd, 0});
    }
  }
  g->sets = std::move(p.sets);
  g->has_tokens = p.has_tokens;
  g->bounds = {0, kMaxCodePoint + 1};
  if (g->has_tokens) g->bounds.push_back(kTokenBase + kMaxTokens);
  for (const auto& set : g->sets)
    for (const Range& r : set) {
      g->bounds.push_back(r.lo);
      g->bounds.push_back(r.hi + 1);
    }
  std::sort(g->bounds.begin(), g->bounds.end());
  g->bounds.erase(std::unique(g->bounds.begin(), g->bounds.end()), g->bounds.end());
  const size_t words = (g->n_classes() + 63) / 64;
  for (const auto& set : g->sets) {
    std::vector<uint64_t> bits(words, 0);
    for (const Range& r : set)
      for (size_t c = g->class_of(r.lo); c <= g->class_of(r.hi); ++c) bits[c / 64] |= uint64_t(1) << (c % 64);
    g->set_classes.push_back(std::move(bits));
  }
  return std::shared_ptr<const Grammar>(std::move(g));
}

}  // namespace zinc::engine
