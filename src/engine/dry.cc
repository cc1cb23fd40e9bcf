#include "engine/dry.h"

#include <algorithm>
#include <cmath>

#include "tokenizer/tokenizer.h"

namespace zinc::engine {

std::shared_ptr<const DryBreakers> DryBreakers::of(const tokenizer::Tokenizer& tok, const std::vector<std::string>& breakers) {
  return build(
      tok.vocab().n_tokens(), breakers, [&tok](int32_t id) { return tok.decode_piece(id, true); },
      [&tok](const std::string& text) { return tok.encode(text, false, false); });
}

void dry_penalties(const DryParams& p, std::span<const int32_t> last, std::vector<int32_t>& repeat,
                   std::unordered_map<int32_t, int32_t>& max_repeat, std::vector<std::pair<int32_t, float>>* out) {
  out->clear();
  if (!p.on()) return;
  const int n = int(p.penalty_last_n < 0 ? last.size() : std::min<size_t>(last.size(), size_t(p.penalty_last_n)));
  if (n <= p.allowed_length) return;
  auto rat = [&](int i) { return last[last.size() - 1 - size_t(i)]; };  // i tokens back from the newest

  // 1. The nearest breaker sequence ending in the window limits how long a repeat may be.
  int rep_limit = n;
  if (p.breakers) {
    for (int i = 0; i < n; ++i) {
      int longest = -1;
      for (auto [it, end] = p.breakers->heads.equal_range(rat(i)); it != end; ++it) {
        const int len = int(it->second.size());
        if (len <= longest || len > i) continue;
        bool match = true;
        for (int k = 0; k < len && match; ++k) match = it->second[size_t(k)] == rat(i - k - 1);
        if (match) longest = len;
      }
      if (longest >= 0) {
        rep_limit = i - longest;
        break;
      }
    }
  }
  if (rep_limit < p.allowed_length) return;

  // 2. For each k, how many tokens before the one k back match the newest ones (a Z-algorithm
  //    over the window read backwards), capped at rep_limit: repeat[n - 1 - k].
  repeat.assign(size_t(n), 0);
  const int back = n - 1;
  for (int k = 1, lt = 0, rt = 0; k < n; ++k) {
    if (k > rt) {
      int m = 0;
      while (m + k < n && rat(m) == rat(m + k)) ++m;
      repeat[size_t(back - k)] = std::min(m, rep_limit);
      if (m > 0) {
        lt = k;
        rt = k + m - 1;
      }
    } else if (repeat[size_t(back - (k - lt))] < rt - k + 1) {
      repeat[size_t(back - k)] = std::min(repeat[size_t(back - (k - lt))], rep_limit);
    } else {
      int i = rt + 1;
      while (i < n && rat(i) == rat(i - k)) ++i;
      repeat[size_t(back - k)] = std::min(i - k, rep_limit);
      lt = k;
      rt = i - 1;
    }
  }

  // 3. The token after each repeat would extend it: the longest repeat each token extends.
  max_repeat.clear();
  for (int i = 0; i + 1 < n; ++i) {
    const int len = repeat[size_t(i)];
    if (len < p.allowed_length) continue;
    const int32_t next = rat(n - 2 - i);
    auto [it, fresh] = max_repeat.emplace(next, len);
    if (!fresh && it->second < len) it->second = len;
  }

  // 4. The penalties, the exponent clamped so the power stays finite; a token that is a breaker
  //    on its own is never penalised.
  constexpr float kFloatMaxLog = 88.7228391f;
  const int max_exponent = p.base > 1.000001f ? int(kFloatMaxLog / std::log(p.base)) : 0;
  for (const auto& [token, len] : max_repeat) {
    bool breaker = false;
    if (p.breakers)
      for (auto [it, end] = p.breakers->heads.equal_range(token); it != end && !breaker; ++it) breaker = it->second.empty();
    if (breaker) continue;
    int exponent = len - p.allowed_length;
    if (max_exponent > 0 && exponent > max_exponent) exponent = max_exponent;
    out->emplace_back(token, p.multiplier * std::pow(p.base, float(exponent)));
  }
}

}  // namespace zinc::engine
