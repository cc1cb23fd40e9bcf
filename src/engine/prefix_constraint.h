// A TokenConstraint from a byte-level recogniser: a token may come next when the recogniser takes
// its whole text from the current state. Used by JSON mode (JsonPrefix) and structured outputs
// (SchemaPrefix). The recogniser State is a copyable value with
//   bool feed(uint8_t c);        // false: c cannot continue (the state is then unusable)
//   bool complete() const;       // the document is whole: the request ends
//   bool in_free_string() const; // inside a string that takes any text but quotes, backslashes
//                                // control bytes and broken UTF-8 (TokenVocab::plain tokens pass unread)
// and, optionally,
//   bool can_end() const;             // the end-of-generation ids may come here even though other
//                                     // tokens could (a grammar whose text may stop or go on)
//   const ByteLoops* loops() const;   // bytes that leave the state as it is (or nullptr; valid
//                                     // until the next feed): a token of them alone passes unread
//
// TokenVocab (every token's text, made once per model and shared) keeps the tokens in byte order
// with the length of the prefix each shares with the one before; mask() feeds each token from the
// state after that shared prefix, so a prefix that fails rules out every token starting with it.
#pragma once

#include <array>
#include <cstdint>
#include <limits>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "engine/token_constraint.h"
#include "tokenizer/tokenizer.h"

namespace zinc::engine {

// The bytes after which a recogniser's state is unchanged: ASCII bytes by bit, and whether every
// character past ASCII is one of them (a token of such bytes must then also be valid UTF-8).
struct ByteLoops {
  std::array<uint64_t, 2> ascii{};
  bool high = false;
};

struct TokenVocab {
  // texts[id]: the bytes token id adds to the output ("" for control tokens, never allowed).
  explicit TokenVocab(std::vector<std::string> token_texts);
  static std::shared_ptr<const TokenVocab> of(const tokenizer::Tokenizer& tok);
  // Whether every byte of token order[i] is one that `loops` keeps the state through.
  bool loops_through(size_t i, const ByteLoops& loops) const {
    const Bytes& b = bytes[i];
    return (b.ascii[0] & ~loops.ascii[0]) == 0 && (b.ascii[1] & ~loops.ascii[1]) == 0 && (!b.high || (loops.high && b.utf8));
  }
  std::vector<std::string> texts;
  struct Bytes {
    std::array<uint64_t, 2> ascii{};  // the ASCII bytes the text holds, by bit
    bool high = false;                // it holds bytes past ASCII
    bool utf8 = false;                // it is UTF-8, its last character perhaps unfinished
  };
  std::vector<Bytes> bytes;      // by position in `order`
  std::vector<uint8_t> plain;    // no quote, backslash or control byte; UTF-8 (json_lex::utf8_continues)
  std::vector<int32_t> order;    // ids by text, bytewise
  std::vector<uint32_t> shared;  // bytes order[i]'s text shares with order[i - 1]'s
  size_t longest = 0;
};

// A document of Inner between two fixed texts (a tool call's markup around its JSON). The texts
// must outlive the state (PrefixConstraint's keep_alive holds them).
template <class Inner>
class FramedPrefix {
 public:
  FramedPrefix() = default;
  FramedPrefix(const std::string* before, Inner inner, const std::string* after)
      : before_(before), after_(after), inner_(inner), part_(before->empty() ? kInner : kBefore) {}
  bool feed(uint8_t c) {
    switch (part_) {
      case kBefore:
        if (c != uint8_t((*before_)[pos_])) return false;
        if (++pos_ == before_->size()) part_ = kInner;
        return true;
      case kInner:
        if (!inner_.feed(c)) return false;
        if (inner_.complete()) {
          part_ = kAfter;
          pos_ = 0;
        }
        return true;
      case kAfter:
        if (pos_ >= after_->size() || c != uint8_t((*after_)[pos_])) return false;
        ++pos_;
        return true;
    }
    return false;
  }
  bool complete() const { return part_ == kAfter && pos_ == after_->size(); }
  bool in_free_string() const { return part_ == kInner && inner_.in_free_string(); }

 private:
  const std::string* before_ = nullptr;
  const std::string* after_ = nullptr;
  Inner inner_;
  enum : uint8_t { kBefore, kInner, kAfter } part_ = kBefore;
  uint32_t pos_ = 0;  // bytes of before_ or after_ matched
};

template <class State>
class PrefixConstraint : public TokenConstraint {
 public:
  // eog: the end-of-generation ids, allowed only where no other token can continue. keep_alive:
  // what `start` points into (a compiled schema), held as long as the constraint.
  PrefixConstraint(std::shared_ptr<const TokenVocab> vocab, State start, std::vector<int32_t> eog,
                   std::shared_ptr<const void> keep_alive = nullptr)
      : vocab_(std::move(vocab)), eog_(std::move(eog)), keep_alive_(std::move(keep_alive)), state_(start),
        states_(vocab_->longest + 1, start) {}

  void mask(std::span<float> logits) const override {
    const TokenVocab& v = *vocab_;
    allowed_.assign(logits.size(), 0);
    if (state_.in_free_string()) {
      for (size_t id = 0; id < v.texts.size() && id < logits.size(); ++id) {
        if (v.texts[id].empty()) continue;
        if (v.plain[id]) {
          allowed_[id] = 1;
        } else {
          states_[0] = state_;
          allowed_[id] = feed_all(states_[0], v.texts[id]);
        }
      }
    } else {
      constexpr size_t kNone = ~size_t(0);
      ByteLoops held;  // a copy: feeding may move what loops() points to
      const ByteLoops* loops = nullptr;
      if constexpr (requires(const State& s) { s.loops(); })
        if (const ByteLoops* l = state_.loops()) loops = &(held = *l);
      size_t fail = kNone;  // where the token before failed
      size_t valid = kNone;  // states_[0..valid] hold the states after the token before's bytes
      states_[0] = state_;
      for (size_t i = 0; i < v.order.size(); ++i) {
        const int32_t id = v.order[i];
        const std::string& t = v.texts[id];
        const size_t from = std::min<size_t>(v.shared[i], valid);
        if (fail != kNone && fail < from) continue;  // the same failing prefix
        valid = std::min(valid, size_t(v.shared[i]));
        if (loops && !t.empty() && v.loops_through(i, *loops)) {  // passes unread; states_ past
          if (size_t(id) < logits.size()) allowed_[id] = 1;                  // the shared prefix go stale
          fail = kNone;
          continue;
        }
        valid = kNone;
        size_t k = from;
        while (k < t.size()) {
          states_[k + 1] = states_[k];
          if (!states_[k + 1].feed(uint8_t(t[k]))) break;
          ++k;
        }
        fail = k < t.size() ? k : kNone;
        if (fail == kNone && !t.empty() && size_t(id) < logits.size()) allowed_[id] = 1;
      }
    }
    allow_more(allowed_);
    if constexpr (requires(const State& s) { s.can_end(); }) {
      if (state_.can_end())
        for (int32_t id : eog_)
          if (id >= 0 && size_t(id) < logits.size()) allowed_[size_t(id)] = 1;
    }
    bool any = false;
    for (size_t id = 0; id < logits.size(); ++id) {
      if (allowed_[id]) any = true;
      else logits[id] = -std::numeric_limits<float>::infinity();
    }
    if (any) return;
    for (int32_t id : eog_)  // nothing can continue: let the request end rather than draw from nothing
      if (id >= 0 && size_t(id) < logits.size()) logits[id] = 0.0f;
  }

  void accept(int32_t token) override {
    if (token >= 0 && size_t(token) < vocab_->texts.size()) feed_all(state_, vocab_->texts[token]);
  }
  bool finished() const override { return state_.complete(); }

 protected:
  static bool feed_all(State& s, std::string_view text) {
    for (char c : text)
      if (!s.feed(uint8_t(c))) return false;
    return true;
  }
  State& state() { return state_; }
  const State& state() const { return state_; }
  const TokenVocab& vocab() const { return *vocab_; }
  // Tokens a subclass lets come beside those whose text the state takes (allowed[id] = 1).
  virtual void allow_more(std::span<uint8_t> /*allowed*/) const {}

 private:
  std::shared_ptr<const TokenVocab> vocab_;
  std::vector<int32_t> eog_;
  std::shared_ptr<const void> keep_alive_;
  State state_;
  // mask()'s scratch: the state after each byte of a token, and which ids may come next.
  mutable std::vector<State> states_;
  mutable std::vector<uint8_t> allowed_;
};

}  // namespace zinc::engine
