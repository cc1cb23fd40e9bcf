#include "engine/regex.h"

#include <algorithm>
#include <map>
#include <utility>

namespace zinc::engine {

namespace {

constexpr uint32_t kMaxCodePoint = 0x10FFFF;
using Ranges = std::vector<std::pair<uint32_t, uint32_t>>;  // inclusive, any order

Ranges complement(Ranges r) {
  std::sort(r.begin(), r.end());
  Ranges out;
  uint32_t next = 0;  // the first code point not yet covered
  for (const auto& [lo, hi] : r) {
    if (lo > next) out.emplace_back(next, lo - 1);
    next = std::max(next, hi + 1);
  }
  if (next <= kMaxCodePoint) out.emplace_back(next, kMaxCodePoint);
  return out;
}

const Ranges kDigit = {{'0', '9'}};
const Ranges kWord = {{'0', '9'}, {'A', 'Z'}, {'_', '_'}, {'a', 'z'}};
const Ranges kSpace = {{'\t', '\r'}, {' ', ' '}, {0xA0, 0xA0}, {0x1680, 0x1680}, {0x2000, 0x200A},
                       {0x2028, 0x2029}, {0x202F, 0x202F}, {0x205F, 0x205F}, {0x3000, 0x3000}, {0xFEFF, 0xFEFF}};
const Ranges kAny = {{0, kMaxCodePoint}};
const Ranges kDot = complement({{'\n', '\n'}, {'\r', '\r'}, {0x2028, 0x2029}});

struct Ast {
  enum class Kind { kChars, kConcat, kAlt, kRepeat } kind = Kind::kConcat;
  Ranges chars;
  std::vector<Ast> kids;
  int min = 0, max = 0;  // kRepeat; max -1: no bound
};

Ast chars(Ranges r) {
  Ast a;
  a.kind = Ast::Kind::kChars;
  a.chars = std::move(r);
  return a;
}

// Recursive descent over the pattern's code points.
class Parser {
 public:
  explicit Parser(std::vector<uint32_t> cps) : p_(std::move(cps)) {}

  // The whole pattern: top-level branches, each anchored or searched for.
  Result<Ast> pattern() {
    Ast alt;
    alt.kind = Ast::Kind::kAlt;
    for (;;) {
      const bool start_anchor = eat('^');
      ZINC_ASSIGN_OR_RETURN(Ast branch, concat());
      bool end_anchor = false;
      if (peek('$')) {
        ++i_;
        end_anchor = true;
      }
      Ast whole;
      if (!start_anchor) whole.kids.push_back(any_run());
      whole.kids.push_back(std::move(branch));
      if (!end_anchor) whole.kids.push_back(any_run());
      alt.kids.push_back(std::move(whole));
      if (i_ == p_.size()) break;
      if (!eat('|')) return error("pattern: ')' without '(' at %zu", i_);
    }
    return alt;
  }

 private:
  static Ast any_run() {
    Ast r;
    r.kind = Ast::Kind::kRepeat;
    r.kids.push_back(chars(kAny));
    r.max = -1;
    return r;
  }
  bool peek(uint32_t c) const { return i_ < p_.size() && p_[i_] == c; }
  bool eat(uint32_t c) {
    if (!peek(c)) return false;
    ++i_;
    return true;
  }

  Result<Ast> alternation() {
    Ast alt;
    alt.kind = Ast::Kind::kAlt;
    for (;;) {
      ZINC_ASSIGN_OR_RETURN(Ast branch, concat());
      alt.kids.push_back(std::move(branch));
      if (!eat('|')) break;
    }
    if (alt.kids.size() == 1) return std::move(alt.kids[0]);
    return alt;
  }

  Result<Ast> concat() {
    Ast seq;
    while (i_ < p_.size() && !peek('|') && !peek(')')) {
      if (peek('$') && (i_ + 1 == p_.size() || p_[i_ + 1] == '|') && depth_ == 0) break;  // the branch's end anchor
      if (peek('^') || peek('$')) return error("pattern: '^' and '$' are supported only at the start and end of a branch");
      ZINC_ASSIGN_OR_RETURN(Ast atom, this->atom());
      ZINC_ASSIGN_OR_RETURN(Ast q, quantified(std::move(atom)));
      seq.kids.push_back(std::move(q));
    }
    return seq;
  }

  // A number of a {n,m} quantifier, or -1.
  int number() {
    if (i_ >= p_.size() || p_[i_] < '0' || p_[i_] > '9') return -1;
    int64_t v = 0;
    while (i_ < p_.size() && p_[i_] >= '0' && p_[i_] <= '9') v = std::min<int64_t>(v * 10 + (p_[i_++] - '0'), 1 << 20);
    return int(v);
  }

  Result<Ast> quantified(Ast atom) {
    int min = 0, max = 0;
    if (eat('*')) {
      max = -1;
    } else if (eat('+')) {
      min = 1;
      max = -1;
    } else if (eat('?')) {
      max = 1;
    } else if (peek('{')) {
      const size_t at = i_++;
      min = number();
      max = min;
      if (min >= 0 && eat(',')) max = peek('}') ? -1 : number();
      if (min < 0 || (max < 0 && !peek('}')) || !eat('}')) {  // not a quantifier: a literal '{'
        i_ = at;
        return atom;
      }
      if (max >= 0 && max < min) return error("pattern: {%d,%d} has its bounds the wrong way round", min, max);
      if (min > 1000 || max > 1000) return error("pattern: repetition counts above 1000 are not supported");
    } else {
      return atom;
    }
    eat('?');  // lazy: the same strings match
    if (peek('*') || peek('+') || peek('?') || peek('{')) return error("pattern: a quantifier cannot follow another");
    Ast r;
    r.kind = Ast::Kind::kRepeat;
    r.min = min;
    r.max = max;
    r.kids.push_back(std::move(atom));
    return r;
  }

  Result<Ast> atom() {
    const uint32_t c = p_[i_++];
    switch (c) {
      case '(': {
        if (eat('?')) {
          if (eat(':')) {
          } else if (eat('<') && !peek('=') && !peek('!')) {
            while (i_ < p_.size() && p_[i_] != '>') ++i_;
            if (!eat('>')) return error("pattern: a group name is not closed");
          } else {
            return error("pattern: lookaround ((?=, (?!, (?<=, (?<!) is not supported");
          }
        }
        ++depth_;
        ZINC_ASSIGN_OR_RETURN(Ast inner, alternation());
        --depth_;
        if (!eat(')')) return error("pattern: '(' is not closed");
        return inner;
      }
      case '[':
        return klass();
      case '.':
        return chars(kDot);
      case '\\': {
        ZINC_ASSIGN_OR_RETURN(Ranges r, escape(/*in_class=*/false));
        return chars(std::move(r));
      }
      case '*': case '+': case '?':
        return error("pattern: '%c' has nothing to repeat", char(c));
      default:
        return chars({{c, c}});
    }
  }

  Result<uint32_t> hex(int digits) {
    uint32_t v = 0;
    for (int k = 0; k < digits; ++k) {
      if (i_ >= p_.size()) return error("pattern: an escape ends early");
      const uint32_t d = p_[i_++];
      if (d >= '0' && d <= '9') v = v * 16 + (d - '0');
      else if (d >= 'a' && d <= 'f') v = v * 16 + (d - 'a' + 10);
      else if (d >= 'A' && d <= 'F') v = v * 16 + (d - 'A' + 10);
      else return error("pattern: a hex escape needs %d hex digits", digits);
    }
    return v;
  }

  // After a backslash.
  Result<Ranges> escape(bool in_class) {
    if (i_ >= p_.size()) return error("pattern: it ends with a backslash");
    const uint32_t c = p_[i_++];
    switch (c) {
      case 'd': return kDigit;
      case 'D': return complement(kDigit);
      case 'w': return kWord;
      case 'W': return complement(kWord);
      case 's': return kSpace;
      case 'S': return complement(kSpace);
      case 't': return Ranges{{'\t', '\t'}};
      case 'n': return Ranges{{'\n', '\n'}};
      case 'r': return Ranges{{'\r', '\r'}};
      case 'f': return Ranges{{'\f', '\f'}};
      case 'v': return Ranges{{'\v', '\v'}};
      case '0': return Ranges{{0, 0}};
      case 'x': {
        ZINC_ASSIGN_OR_RETURN(uint32_t v, hex(2));
        return Ranges{{v, v}};
      }
      case 'u': {
        ZINC_ASSIGN_OR_RETURN(uint32_t v, hex(4));
        return Ranges{{v, v}};
      }
      case 'b':
        if (in_class) return Ranges{{'\b', '\b'}};
        return error("pattern: word boundaries (\\b) are not supported");
      case 'B': return error("pattern: \\B is not supported");
      case 'p': case 'P': return error("pattern: Unicode property escapes (\\p{...}) are not supported");
      case 'k': return error("pattern: backreferences are not supported");
      case 'c': return error("pattern: control escapes (\\cX) are not supported");
      default:
        if (c >= '1' && c <= '9') return error("pattern: backreferences are not supported");
        return Ranges{{c, c}};  // an identity escape: \. \\ \/ \- \[ ...
    }
  }

  // After '['.
  Result<Ast> klass() {
    const bool negated = eat('^');
    Ranges r;
    bool first = true;
    for (;;) {
      if (i_ >= p_.size()) return error("pattern: '[' is not closed");
      if (peek(']') && !first) {
        ++i_;
        break;
      }
      if (peek(']')) {  // "[]" matches nothing, "[^]" anything
        ++i_;
        break;
      }
      first = false;
      ZINC_ASSIGN_OR_RETURN(Ranges lo, class_atom());
      if (peek('-') && i_ + 1 < p_.size() && p_[i_ + 1] != ']') {
        ++i_;
        ZINC_ASSIGN_OR_RETURN(Ranges hi, class_atom());
        if (lo.size() != 1 || hi.size() != 1 || lo[0].first != lo[0].second || hi[0].first != hi[0].second)
          return error("pattern: a class range needs single characters at both ends");
        if (hi[0].first < lo[0].first) return error("pattern: a class range is the wrong way round");
        r.emplace_back(lo[0].first, hi[0].first);
      } else {
        r.insert(r.end(), lo.begin(), lo.end());
      }
    }
    return chars(negated ? complement(r) : r);
  }

  Result<Ranges> class_atom() {
    const uint32_t c = p_[i_++];
    if (c == '\\') return escape(/*in_class=*/true);
    return Ranges{{c, c}};
  }

  std::vector<uint32_t> p_;
  size_t i_ = 0;
  int depth_ = 0;  // groups open
};

// Thompson's construction: states with character edges and empty edges.
struct Nfa {
  struct Edge {
    int to;
    Ranges chars;
  };
  std::vector<std::vector<Edge>> edges;
  std::vector<std::vector<int>> empty;

  Result<int> state() {
    if (int(edges.size()) >= Regex::kMaxNfaStates) return error("pattern: too large (more than %d states)", Regex::kMaxNfaStates);
    edges.emplace_back();
    empty.emplace_back();
    return int(edges.size()) - 1;
  }

  // A fragment for `a`, entered at *in and left at *out.
  Status build(const Ast& a, int* in, int* out) {
    ZINC_ASSIGN_OR_RETURN(*in, state());
    switch (a.kind) {
      case Ast::Kind::kChars: {
        ZINC_ASSIGN_OR_RETURN(*out, state());
        edges[size_t(*in)].push_back({*out, a.chars});
        return ok_status();
      }
      case Ast::Kind::kConcat: {
        int at = *in;
        for (const Ast& k : a.kids) {
          int s = 0, e = 0;
          ZINC_RETURN_IF_ERROR(build(k, &s, &e));
          empty[size_t(at)].push_back(s);
          at = e;
        }
        *out = at;
        return ok_status();
      }
      case Ast::Kind::kAlt: {
        ZINC_ASSIGN_OR_RETURN(*out, state());
        for (const Ast& k : a.kids) {
          int s = 0, e = 0;
          ZINC_RETURN_IF_ERROR(build(k, &s, &e));
          empty[size_t(*in)].push_back(s);
          empty[size_t(e)].push_back(*out);
        }
        return ok_status();
      }
      case Ast::Kind::kRepeat: {
        int at = *in;
        for (int k = 0; k < a.min; ++k) {
          int s = 0, e = 0;
          ZINC_RETURN_IF_ERROR(build(a.kids[0], &s, &e));
          empty[size_t(at)].push_back(s);
          at = e;
        }
        if (a.max < 0) {  // then any number more
          int s = 0, e = 0;
          ZINC_RETURN_IF_ERROR(build(a.kids[0], &s, &e));
          ZINC_ASSIGN_OR_RETURN(*out, state());
          empty[size_t(at)].push_back(s);
          empty[size_t(at)].push_back(*out);
          empty[size_t(e)].push_back(s);
          empty[size_t(e)].push_back(*out);
          return ok_status();
        }
        ZINC_ASSIGN_OR_RETURN(*out, state());
        for (int k = a.min; k < a.max; ++k) {  // each optional
          int s = 0, e = 0;
          ZINC_RETURN_IF_ERROR(build(a.kids[0], &s, &e));
          empty[size_t(at)].push_back(s);
          empty[size_t(at)].push_back(*out);
          at = e;
        }
        empty[size_t(at)].push_back(*out);
        return ok_status();
      }
    }
    return ok_status();
  }

  void close(std::vector<int>& set) const {  // sorted, with every state reached by empty edges
    std::vector<uint8_t> in(edges.size(), 0);
    for (int s : set) in[size_t(s)] = 1;
    for (size_t k = 0; k < set.size(); ++k)
      for (int t : empty[size_t(set[k])])
        if (!in[size_t(t)]) {
          in[size_t(t)] = 1;
          set.push_back(t);
        }
    std::sort(set.begin(), set.end());
  }
};

std::vector<uint32_t> code_points(std::string_view s) {
  std::vector<uint32_t> out;
  for (size_t i = 0; i < s.size();) {
    const uint8_t c = uint8_t(s[i]);
    const int n = c < 0x80 ? 1 : c < 0xE0 ? 2 : c < 0xF0 ? 3 : 4;
    uint32_t v = n == 1 ? c : n == 2 ? c & 0x1F : n == 3 ? c & 0x0F : c & 0x07;
    for (int k = 1; k < n && i + size_t(k) < s.size(); ++k) v = v << 6 | (uint8_t(s[i + size_t(k)]) & 0x3F);
    out.push_back(v);
    i += size_t(n);
  }
  return out;
}

}  // namespace

Result<Regex> Regex::compile(std::string_view pattern, size_t* budget) {
  size_t own = kMaxWork;
  if (!budget) budget = &own;
  Parser parser(code_points(pattern));
  ZINC_ASSIGN_OR_RETURN(Ast ast, parser.pattern());
  Nfa nfa;
  int in = 0, out = 0;
  ZINC_RETURN_IF_ERROR(nfa.build(ast, &in, &out));

  // Character classes: the code points no edge tells apart.
  Regex r;
  std::vector<uint32_t> cuts = {0, kMaxCodePoint + 1};
  for (const auto& es : nfa.edges)
    for (const auto& e : es)
      for (const auto& [lo, hi] : e.chars) {
        cuts.push_back(lo);
        cuts.push_back(hi + 1);
      }
  std::sort(cuts.begin(), cuts.end());
  cuts.erase(std::unique(cuts.begin(), cuts.end()), cuts.end());
  r.bounds_ = cuts;
  r.n_classes_ = cuts.size() - 1;
  auto class_of = [&](uint32_t cp) { return size_t(std::upper_bound(cuts.begin(), cuts.end(), cp) - cuts.begin()) - 1; };

  // Subset construction.
  std::map<std::vector<int>, uint16_t> index;
  std::vector<std::vector<int>> sets;
  size_t work = 0;  // NFA states visited: a request's patterns must not take seconds
  auto add = [&](std::vector<int> set) -> Result<uint16_t> {
    if (set.empty()) return kDead;
    nfa.close(set);
    work += set.size();
    if (work > *budget) return error("pattern: too large (its DFA takes too long to build)");
    auto it = index.find(set);
    if (it != index.end()) return it->second;
    if (int(sets.size()) >= kMaxDfaStates) return error("pattern: too large (more than %d DFA states)", kMaxDfaStates);
    if ((sets.size() + 1) * r.n_classes_ > kMaxTable) return error("pattern: too large (its DFA table)");
    const uint16_t id = uint16_t(sets.size());
    index.emplace(set, id);
    sets.push_back(std::move(set));
    return id;
  };
  ZINC_RETURN_IF_ERROR(add({in}).status());
  std::vector<std::vector<int>> targets(r.n_classes_);
  for (size_t d = 0; d < sets.size(); ++d) {
    for (auto& t : targets) t.clear();
    for (int s : sets[d])
      for (const auto& e : nfa.edges[size_t(s)])
        for (const auto& [lo, hi] : e.chars)
          for (size_t c = class_of(lo); c < r.n_classes_ && cuts[c] <= hi; ++c) targets[c].push_back(e.to);
    const size_t row = r.next_.size();
    r.next_.resize(row + r.n_classes_);
    for (size_t c = 0; c < r.n_classes_; ++c) {
      std::sort(targets[c].begin(), targets[c].end());
      targets[c].erase(std::unique(targets[c].begin(), targets[c].end()), targets[c].end());
      ZINC_ASSIGN_OR_RETURN(uint16_t next, add(targets[c]));
      r.next_[row + c] = next;
    }
    r.accepting_.push_back(std::binary_search(sets[d].begin(), sets[d].end(), out));
  }
  // States from which no match can be reached are dead too ("a[]b" after the a).
  std::vector<uint8_t> live(r.accepting_.begin(), r.accepting_.end());
  for (bool changed = true; changed;) {
    changed = false;
    for (size_t d = 0; d < sets.size(); ++d)
      for (size_t c = 0; c < r.n_classes_ && !live[d]; ++c) {
        const uint16_t t = r.next_[d * r.n_classes_ + c];
        if (t != kDead && live[t]) live[d] = changed = true;
      }
  }
  *budget -= work;
  if (!live[0]) return error("pattern: no string matches it");
  for (uint16_t& t : r.next_)
    if (t != kDead && !live[t]) t = kDead;
  return r;
}

uint16_t Regex::step(uint16_t state, uint32_t code_point) const {
  if (state == kDead || code_point > kMaxCodePoint) return kDead;
  const size_t c = size_t(std::upper_bound(bounds_.begin(), bounds_.end(), code_point) - bounds_.begin()) - 1;
  return next_[size_t(state) * n_classes_ + c];
}

}  // namespace zinc::engine
