// DRY ("don't repeat yourself"), llama.cpp's repetition sampler (model-spec 5.2): a token that
// would extend a repeat of the context's last tokens by one, where the repeat is at least
// allowed_length long, loses multiplier * base^(length - allowed_length) from its logit.
// Sequence breakers (text such as "\n" or ":") cap how far back a repeat may reach.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

namespace zinc::tokenizer {
class Tokenizer;
}

namespace zinc::engine {

// The breakers as token sequences: for every token whose text contains a breaker, an empty
// tail; for every token whose text ends with the start of a breaker, the tokens of the rest
// of it (at most kMaxTailTokens). Built once per breaker list from the vocabulary.
struct DryBreakers {
  static constexpr size_t kMaxBreakerBytes = 40, kMaxTailTokens = 20;
  std::unordered_multimap<int32_t, std::vector<int32_t>> heads;

  // `piece(id)` is a token's text (special tokens rendered); `encode` tokenizes plain text.
  template <typename Piece, typename Encode>
  static std::shared_ptr<const DryBreakers> build(int32_t n_vocab, const std::vector<std::string>& breakers, Piece piece, Encode encode);
  // The same from a tokenizer.
  static std::shared_ptr<const DryBreakers> of(const tokenizer::Tokenizer& tok, const std::vector<std::string>& breakers);
};



// llama.cpp's default breakers: newline, colon, double quote, asterisk.
inline const std::vector<std::string> kDefaultDryBreakers = {"\n", ":", "\"", "*"};

struct DryParams {
  float multiplier = 0.0f;  // 0: off
  float base = 1.75f;
  int32_t allowed_length = 2;
  int32_t penalty_last_n = -1;  // tokens looked back (-1: the whole window, 0: off)
  std::vector<std::string> sequence_breakers = kDefaultDryBreakers;
  std::shared_ptr<const DryBreakers> breakers;  // sequence_breakers as tokens (DryBreakers::of); null: none
  bool on() const { return multiplier != 0.0f && base >= 1.0f && penalty_last_n != 0; }
};

// The penalty of each token that would extend a repeat of `last` (oldest first), as
// (token, amount) pairs. `repeat`: scratch.
void dry_penalties(const DryParams& p, std::span<const int32_t> last, std::vector<int32_t>& repeat,
                   std::unordered_map<int32_t, int32_t>& max_repeat, std::vector<std::pair<int32_t, float>>* out);

template <typename Piece, typename Encode>
std::shared_ptr<const DryBreakers> DryBreakers::build(int32_t n_vocab, const std::vector<std::string>& breakers, Piece piece, Encode encode) {
  auto out = std::make_shared<DryBreakers>();
  for (std::string b : breakers) {
    if (b.empty()) continue;
    if (b.size() > kMaxBreakerBytes) b.resize(kMaxBreakerBytes);
    for (int32_t id = 0; id < n_vocab; ++id) {
      const std::string word(piece(id));
      if (word.find(b) != std::string::npos) {
        out->heads.emplace(id, std::vector<int32_t>());
        continue;
      }
      // The token's text ends with a start of the breaker: the breaker's rest, as tokens.
      for (size_t pos = word.find(b[0]); pos != std::string::npos; pos = word.find(b[0], pos + 1)) {
        size_t i = 1;
        bool match = true;
        for (; i < b.size() && pos + i < word.size(); ++i)
          if (word[pos + i] != b[i]) {
            match = false;
            break;
          }
        if (!match) continue;
        std::vector<int32_t> tail = encode(b.substr(i));
        if (tail.size() > kMaxTailTokens) tail.resize(kMaxTailTokens);
        bool seen = false;
        for (auto [it, end] = out->heads.equal_range(id); it != end && !seen; ++it) seen = it->second == tail;
        if (!seen) out->heads.emplace(id, std::move(tail));
      }
    }
  }
  return out;
}

}  // namespace zinc::engine
