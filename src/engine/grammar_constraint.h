// Generation held to a GBNF grammar (gbnf.h), as llama.cpp's `grammar` holds it: a token may come
// when the grammar can go on after its text, and the end-of-generation tokens may come where the
// grammar can end. The request stops by itself only where nothing could follow.
//
// GrammarAutomaton runs the grammar as a pushdown automaton made deterministic on the fly. A stack
// is a chain of interned nodes (the element to match next, and the node to go on with after its
// rule ends); a rule's last element pops its frame before the callee runs, so right recursion
// (every quantifier) does not deepen stacks. A configuration is an interned sorted set of stacks
// whose tops are character sets; its transition on each character class is computed once. States
// are then one int, cheap to copy for every token tried; where a configuration loops on the
// characters of free text, tokens of them alone are allowed without stepping. The tables grow with what generation
// visits; past their budget the constraint rebuilds them from the current configuration alone.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "engine/gbnf.h"
#include "engine/prefix_constraint.h"

namespace zinc::engine {

class GrammarAutomaton {
 public:
  static constexpr int32_t kDead = -1;
  static constexpr size_t kMaxNodes = size_t(1) << 20;
  static constexpr size_t kMaxSets = size_t(1) << 16;
  static constexpr size_t kMaxTable = size_t(1) << 24;  // transition entries over all sets
  static constexpr size_t kMaxExpansion = size_t(1) << 16;  // stacks one step may visit

  explicit GrammarAutomaton(std::shared_ptr<const Grammar> grammar);

  int32_t start() const { return start_; }
  int32_t step(int32_t set, uint32_t code_point);
  // Whether some code point in [lo, hi] can come next.
  bool continues(int32_t set, uint32_t lo, uint32_t hi);
  bool can_end(int32_t set) const { return set >= 0 && sets_[size_t(set)].front() == kAccept; }
  bool must_end(int32_t set) const { return can_end(set) && sets_[size_t(set)].size() == 1; }
  bool has_tokens() const { return g_->has_tokens; }
  // Sets allowed[id] for every token id a token reference lets come next.
  void allow_tokens(int32_t set, std::span<uint8_t> allowed);
  // The configuration holding the stacks of both (sets of one generation).
  int32_t merge(int32_t a, int32_t b);
  // The characters after which `set` is itself again (a free text's).
  const ByteLoops& loops(int32_t set);
  bool over_budget() const { return nodes_.size() > kMaxNodes || sets_.size() > kMaxSets || table_ > kMaxTable; }
  // Rebuilds the tables holding only what `set` needs; returns its id there (other ids die).
  int32_t compact(int32_t set);
  size_t n_sets() const { return sets_.size(); }

 private:
  static constexpr int32_t kAccept = 0;  // the empty stack: the grammar is done
  static constexpr int32_t kUnknown = -2;
  struct Node {
    int32_t pos;     // an element of the grammar
    int32_t parent;  // the node to go on with when its rule ends; -1: the root's end
  };
  void reset();
  int32_t node(int32_t pos, int32_t parent);
  void expand(int32_t pos, int32_t parent, std::vector<int32_t>& out, std::unordered_set<uint64_t>& seen);
  const std::vector<int32_t>& successors(int32_t node);
  int32_t intern(std::vector<int32_t>& nodes);
  int32_t step_class(int32_t set, size_t cls);

  std::shared_ptr<const Grammar> g_;
  std::vector<Node> nodes_;
  std::unordered_map<uint64_t, int32_t> node_ids_;
  std::vector<std::vector<int32_t>> succ_;  // per node (tops only), once computed
  std::vector<uint8_t> succ_done_;
  std::vector<std::vector<int32_t>> sets_;
  std::unordered_map<std::string, int32_t> set_ids_;  // a set's node ids as bytes
  std::vector<std::vector<int32_t>> next_;             // per set, per class: the next set
  std::vector<ByteLoops> loops_;                       // per set, once computed
  std::vector<uint8_t> loops_done_;
  size_t table_ = 0;
  int32_t start_ = kDead;
  uint8_t ascii_class_[128] = {};
};

struct GrammarState {
  GrammarAutomaton* automaton = nullptr;
  int32_t set = GrammarAutomaton::kDead;
  uint32_t code_point = 0;  // the bits of a multi-byte character begun
  uint8_t need = 0;         // its continuation bytes still to come
  uint8_t length = 0;       // its length in bytes

  bool feed(uint8_t c);
  bool complete() const { return need == 0 && automaton->must_end(set); }
  bool can_end() const { return need == 0 && automaton->can_end(set); }
  bool in_free_string() const { return false; }
  const ByteLoops* loops() const { return need == 0 && set >= 0 ? &automaton->loops(set) : nullptr; }
};

// A model's tokens for Grammar::compile's token references (the tokenizer must outlive it).
Grammar::Tokens grammar_tokens(const tokenizer::Tokenizer& tok);

class GrammarConstraint : public PrefixConstraint<GrammarState> {
 public:
  static std::shared_ptr<GrammarConstraint> make(std::shared_ptr<const TokenVocab> vocab, std::shared_ptr<const Grammar> grammar,
                                                 std::vector<int32_t> eog);
  void accept(int32_t token) override;

 protected:
  void allow_more(std::span<uint8_t> allowed) const override;

 private:
  GrammarConstraint(std::shared_ptr<const TokenVocab> vocab, std::shared_ptr<GrammarAutomaton> automaton, std::vector<int32_t> eog);
  GrammarAutomaton* automaton_;
};

}  // namespace zinc::engine
