#include "engine/grammar_constraint.h"

#include <algorithm>
#include <string>

namespace zinc::engine {

GrammarAutomaton::GrammarAutomaton(std::shared_ptr<const Grammar> grammar) : g_(std::move(grammar)) {
  for (uint32_t c = 0; c < 128; ++c) ascii_class_[c] = uint8_t(std::min<size_t>(g_->class_of(c), 255));
  reset();
  std::vector<int32_t> start;
  std::unordered_set<uint64_t> seen;
  for (uint32_t a : g_->alternatives[g_->root]) expand(int32_t(a), -1, start, seen);
  start_ = intern(start);
}

void GrammarAutomaton::reset() {
  nodes_.assign(1, {-1, -1});  // kAccept
  node_ids_.clear();
  succ_.assign(1, {});
  succ_done_.assign(1, 1);
  sets_.clear();
  set_ids_.clear();
  next_.clear();
  loops_.clear();
  loops_done_.clear();
  table_ = 0;
}

int32_t GrammarAutomaton::node(int32_t pos, int32_t parent) {
  const uint64_t key = uint64_t(uint32_t(pos)) << 32 | uint32_t(parent);
  auto [it, added] = node_ids_.try_emplace(key, int32_t(nodes_.size()));
  if (added) {
    nodes_.push_back({pos, parent});
    succ_.emplace_back();
    succ_done_.push_back(0);
  }
  return it->second;
}

// The stacks that continue at element `pos`, then at `parent`, with a character set on top.
void GrammarAutomaton::expand(int32_t pos, int32_t parent, std::vector<int32_t>& out, std::unordered_set<uint64_t>& seen) {
  if (!seen.insert(uint64_t(uint32_t(pos)) << 32 | uint32_t(parent)).second || seen.size() > kMaxExpansion) return;
  const Grammar::Element& e = g_->elements[size_t(pos)];
  switch (e.kind) {
    case Grammar::Element::kChars:
      out.push_back(node(pos, parent));
      return;
    case Grammar::Element::kEnd:
      if (parent < 0) out.push_back(kAccept);
      else expand(nodes_[size_t(parent)].pos, nodes_[size_t(parent)].parent, out, seen);
      return;
    case Grammar::Element::kRef: {
      // A call in last place returns straight to the caller's continuation.
      const bool last = g_->elements[size_t(pos) + 1].kind == Grammar::Element::kEnd;
      const int32_t then = last ? parent : node(pos + 1, parent);
      for (uint32_t a : g_->alternatives[e.arg]) expand(int32_t(a), then, out, seen);
      return;
    }
  }
}

const std::vector<int32_t>& GrammarAutomaton::successors(int32_t n) {
  if (!succ_done_[size_t(n)]) {
    std::vector<int32_t> out;
    std::unordered_set<uint64_t> seen;
    expand(nodes_[size_t(n)].pos + 1, nodes_[size_t(n)].parent, out, seen);
    succ_[size_t(n)] = std::move(out);  // expand may have added nodes: index again
    succ_done_[size_t(n)] = 1;
  }
  return succ_[size_t(n)];
}

int32_t GrammarAutomaton::intern(std::vector<int32_t>& nodes) {
  if (nodes.empty()) return kDead;
  std::sort(nodes.begin(), nodes.end());
  nodes.erase(std::unique(nodes.begin(), nodes.end()), nodes.end());
  std::string key(reinterpret_cast<const char*>(nodes.data()), nodes.size() * sizeof(int32_t));
  auto [it, added] = set_ids_.try_emplace(std::move(key), int32_t(sets_.size()));
  if (added) {
    sets_.push_back(nodes);
    next_.emplace_back();
    loops_.emplace_back();
    loops_done_.push_back(0);
  }
  return it->second;
}

int32_t GrammarAutomaton::step_class(int32_t set, size_t cls) {
  if (next_[size_t(set)].empty()) {
    next_[size_t(set)].assign(g_->n_classes(), kUnknown);
    table_ += g_->n_classes();
  }
  if (const int32_t known = next_[size_t(set)][cls]; known != kUnknown) return known;
  std::vector<int32_t> out;
  for (size_t i = 0; i < sets_[size_t(set)].size(); ++i) {
    const int32_t n = sets_[size_t(set)][i];
    if (n == kAccept || !g_->holds(g_->elements[size_t(nodes_[size_t(n)].pos)].arg, cls)) continue;
    const std::vector<int32_t>& s = successors(n);
    out.insert(out.end(), s.begin(), s.end());
  }
  const int32_t to = intern(out);
  next_[size_t(set)][cls] = to;
  return to;
}

int32_t GrammarAutomaton::step(int32_t set, uint32_t code_point) {
  if (set < 0) return kDead;
  return step_class(set, code_point < 128 ? ascii_class_[code_point] : g_->class_of(code_point));
}

bool GrammarAutomaton::continues(int32_t set, uint32_t lo, uint32_t hi) {
  if (set < 0) return false;
  for (size_t c = g_->class_of(lo), last = g_->class_of(hi); c <= last; ++c)
    if (step_class(set, c) != kDead) return true;
  return false;
}

int32_t GrammarAutomaton::merge(int32_t a, int32_t b) {
  if (a < 0 || b < 0 || a == b) return a < 0 ? b : a;
  std::vector<int32_t> both = sets_[size_t(a)];
  both.insert(both.end(), sets_[size_t(b)].begin(), sets_[size_t(b)].end());
  return intern(both);
}

void GrammarAutomaton::allow_tokens(int32_t set, std::span<uint8_t> allowed) {
  if (set < 0) return;
  for (size_t c = g_->first_token_class(); c < g_->n_classes(); ++c) {
    if (step_class(set, c) == kDead) continue;
    const size_t lo = g_->bounds[c] - Grammar::kTokenBase, hi = g_->bounds[c + 1] - Grammar::kTokenBase;
    for (size_t id = lo; id < hi && id < allowed.size(); ++id) allowed[id] = 1;
  }
}

const ByteLoops& GrammarAutomaton::loops(int32_t set) {
  if (!loops_done_[size_t(set)]) {
    ByteLoops l;
    for (uint32_t c = 0; c < 128; ++c)
      if (step_class(set, ascii_class_[c]) == set) l.ascii[c / 64] |= uint64_t(1) << (c % 64);
    l.high = true;
    for (size_t c = g_->class_of(0x80); c < g_->first_token_class() && l.high; ++c)
      if (g_->bounds[c] < 0xD800 || g_->bounds[c] > 0xDFFF) l.high = step_class(set, c) == set;
    loops_[size_t(set)] = l;
    loops_done_[size_t(set)] = 1;
  }
  return loops_[size_t(set)];
}

int32_t GrammarAutomaton::compact(int32_t set) {
  if (set < 0) return set;
  const std::vector<Node> old = std::move(nodes_);
  const std::vector<int32_t> tops = sets_[size_t(set)];
  reset();
  std::unordered_map<int32_t, int32_t> moved{{kAccept, kAccept}};
  std::vector<int32_t> fresh;
  for (int32_t top : tops) {
    std::vector<int32_t> chain;  // from top down to the first node already moved (or the root)
    for (int32_t n = top; n >= 0 && !moved.count(n); n = old[size_t(n)].parent) chain.push_back(n);
    for (auto it = chain.rbegin(); it != chain.rend(); ++it) {
      const int32_t parent = old[size_t(*it)].parent;
      moved[*it] = node(old[size_t(*it)].pos, parent < 0 ? parent : moved.at(parent));
    }
    fresh.push_back(moved.at(top));
  }
  start_ = kDead;  // generation has left the start
  return intern(fresh);
}

bool GrammarState::feed(uint8_t c) {
  if (need == 0) {
    if (c < 0x80) {
      set = automaton->step(set, c);
      return set != GrammarAutomaton::kDead;
    }
    if (c >= 0xC2 && c <= 0xDF) length = 2, code_point = c & 0x1F;
    else if (c >= 0xE0 && c <= 0xEF) length = 3, code_point = c & 0x0F;
    else if (c >= 0xF0 && c <= 0xF4) length = 4, code_point = c & 0x07;
    else return false;
    need = uint8_t(length - 1);
  } else {
    if ((c & 0xC0) != 0x80) return false;
    code_point = code_point << 6 | (c & 0x3F);
    --need;
  }
  // The characters these bytes can still begin, within what their length may encode.
  static constexpr uint32_t kMin[] = {0, 0, 0x80, 0x800, 0x10000}, kMax[] = {0, 0, 0x7FF, 0xFFFF, 0x10FFFF};
  const uint32_t lo = std::max(code_point << (6 * need), kMin[length]);
  const uint32_t hi = std::min((code_point << (6 * need)) | ((1u << (6 * need)) - 1), kMax[length]);
  if (lo > hi || (lo >= 0xD800 && hi <= 0xDFFF)) return false;  // overlong, too large, or a surrogate
  if (need > 0) return automaton->continues(set, lo, hi);
  set = automaton->step(set, code_point);
  return set != GrammarAutomaton::kDead;
}

Grammar::Tokens grammar_tokens(const tokenizer::Tokenizer& tok) {
  Grammar::Tokens t;
  t.n_tokens = tok.vocab().n_tokens();
  t.of_text = [&tok](std::string_view text) -> std::optional<int32_t> {
    const std::vector<int32_t> ids = tok.encode(text, /*add_special=*/false, /*parse_special=*/true);
    if (ids.size() != 1) return std::nullopt;
    return ids[0];
  };
  return t;
}

GrammarConstraint::GrammarConstraint(std::shared_ptr<const TokenVocab> vocab, std::shared_ptr<GrammarAutomaton> automaton,
                                     std::vector<int32_t> eog)
    : PrefixConstraint(std::move(vocab), GrammarState{automaton.get(), automaton->start()}, std::move(eog), automaton),
      automaton_(automaton.get()) {}

std::shared_ptr<GrammarConstraint> GrammarConstraint::make(std::shared_ptr<const TokenVocab> vocab,
                                                           std::shared_ptr<const Grammar> grammar, std::vector<int32_t> eog) {
  auto automaton = std::make_shared<GrammarAutomaton>(std::move(grammar));
  return std::shared_ptr<GrammarConstraint>(new GrammarConstraint(std::move(vocab), std::move(automaton), std::move(eog)));
}

void GrammarConstraint::allow_more(std::span<uint8_t> allowed) const {
  if (automaton_->has_tokens() && state().need == 0) automaton_->allow_tokens(state().set, allowed);
}

// A stack with a token reference on top takes the token by its id; the others read its text.
// Where both go on (and the text ends on a whole character) the grammar goes on from both.
void GrammarConstraint::accept(int32_t token) {
  GrammarState& s = state();
  const bool by_id = automaton_->has_tokens() && s.need == 0 && token >= 0 && uint32_t(token) < Grammar::kMaxTokens;
  const int32_t after_id = by_id ? automaton_->step(s.set, Grammar::kTokenBase + uint32_t(token)) : GrammarAutomaton::kDead;
  if (after_id == GrammarAutomaton::kDead) {
    PrefixConstraint::accept(token);
  } else {
    GrammarState by_text = s;
    const std::string_view text = size_t(token) < vocab().texts.size() ? std::string_view(vocab().texts[size_t(token)]) : "";
    if (text.empty() || !feed_all(by_text, text)) s.set = after_id;
    else if (by_text.need == 0) s.set = automaton_->merge(by_text.set, after_id);
    else s = by_text;  // a character left unfinished: only the text's reading can go on
  }
  if (automaton_->over_budget()) s.set = automaton_->compact(s.set);
}

}  // namespace zinc::engine
