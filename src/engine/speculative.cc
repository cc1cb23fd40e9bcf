#include "engine/speculative.h"

#include <algorithm>
#include <chrono>
#include <cmath>

namespace zinc::engine {
namespace {

// The best token of a logits row and its softmax probability.
std::pair<int32_t, float> best_of(std::span<const float> row) {
  const auto it = std::max_element(row.begin(), row.end());
  double sum = 0;
  for (float x : row) sum += std::exp(double(x - *it));
  return {int32_t(it - row.begin()), float(1.0 / sum)};
}

}  // namespace

Result<GenerateResult> generate_speculative(Runner& target, kv::SeqId seq, Runner& draft, kv::SeqId draft_seq,
                                            std::span<const int32_t> prompt, Sampler& sampler, const GenerateOptions& options,
                                            const DraftOptions& draft_options, const TokenCallback& on_token, DraftStats* stats) {
  if (prompt.empty()) return error("the prompt is empty");
  if (target.cache().state_bytes() > 0 || draft.cache().state_bytes() > 0)
    return error("speculative decoding needs attention-only models: a recurrent state cannot be rolled back past a rejected guess");
  const int64_t n_vocab = target.model().hparams().n_vocab;
  if (draft.model().hparams().n_vocab != n_vocab)
    return error("the draft model's vocabulary has %lld tokens, the model's %lld: they must share one", (long long)draft.model().hparams().n_vocab,
                 (long long)n_vocab);
  if (target.cache().length(seq) != draft.cache().length(draft_seq)) return error("the draft's sequence is not at the model's length");
  using clock = std::chrono::steady_clock;
  GenerateResult result;
  result.prompt_tokens = int64_t(prompt.size());
  for (int32_t t : prompt) sampler.accept(t);

  // Both models take all of the prompt but its last token, which each round starts from.
  const auto t0 = clock::now();
  const std::span<const int32_t> head = prompt.first(prompt.size() - 1);
  if (!head.empty()) {
    ZINC_RETURN_IF_ERROR(target.decode(seq, head, false).status());
    ZINC_RETURN_IF_ERROR(draft.decode(draft_seq, head, false).status());
  }
  const auto t1 = clock::now();
  result.prefill_seconds = std::chrono::duration<double>(t1 - t0).count();

  int32_t last = prompt.back();         // kept, in neither cache yet
  std::vector<int32_t> draft_behind;    // kept tokens before `last` the draft has not evaluated
  std::vector<int32_t> batch;
  std::vector<float> masked;
  const int64_t n_ctx = target.cache().capacity(seq) + target.cache().free_pages() * kv::kPageTokens;
  while (int32_t(result.tokens.size()) < options.max_new_tokens) {
    const int64_t base = target.cache().length(seq);
    // Guesses: the draft's greedy continuation of `last`, while it is sure enough.
    const int32_t left = options.max_new_tokens - int32_t(result.tokens.size());
    const int64_t room = n_ctx - base - 1;
    const int32_t n_max = int32_t(std::min<int64_t>({draft_options.max_tokens, left - 1, room}));
    batch.assign(1, last);
    int64_t draft_at_last = -1;  // the draft's length once it has evaluated `last`
    if (n_max > 0) {
      draft_behind.push_back(last);
      ZINC_ASSIGN_OR_RETURN(std::span<const float> row, draft.decode(draft_seq, draft_behind, false));
      draft_behind.clear();
      draft_at_last = draft.cache().length(draft_seq);
      while (true) {
        const auto [guess, p] = best_of(row);
        if (p < draft_options.p_min) break;
        batch.push_back(guess);
        if (int32_t(batch.size()) - 1 >= n_max) break;
        ZINC_ASSIGN_OR_RETURN(row, draft.decode(draft_seq, std::span<const int32_t>(&batch.back(), 1), false));
      }
    } else {
      draft_behind.push_back(last);
    }
    if (int32_t(batch.size()) - 1 < draft_options.min_tokens) batch.resize(1);
    const int32_t n_guess = int32_t(batch.size()) - 1;
    // The target's rows for `last` and every guess, taken in order by its sampler.
    ZINC_ASSIGN_OR_RETURN(std::span<const float> rows, target.decode(seq, batch, true));
    int32_t kept = 0;  // guesses kept
    bool done = false;
    for (int32_t i = 0; i <= n_guess; ++i) {
      const std::optional<int32_t> sampled =
          sample_next(rows.subspan(size_t(i) * size_t(n_vocab), size_t(n_vocab)), sampler, options, masked);
      if (!sampled) {
        result.reason = StopReason::kEndOfGeneration;
        done = true;
        break;
      }
      const int32_t t = *sampled;
      result.tokens.push_back(t);
      last = t;
      if (on_token && !on_token(t)) {
        result.reason = StopReason::kCallback;
        done = true;
        break;
      }
      if (options.constraint && options.constraint->finished()) {
        result.reason = StopReason::kEndOfGeneration;
        done = true;
        break;
      }
      if (int32_t(result.tokens.size()) >= options.max_new_tokens) {
        done = true;
        break;
      }
      if (i == n_guess || t != batch[size_t(i) + 1]) break;
      ++kept;
    }
    if (stats) {
      stats->drafted += n_guess;
      stats->accepted += kept;
    }
    // The target keeps `last` of this round and the kept guesses. The draft evaluated `last` and
    // its guesses up to the one it stopped at; a kept guess it did not evaluate it still owes.
    target.cache().set_length(seq, base + 1 + kept);
    if (draft_at_last >= 0) {
      const int64_t evaluated = draft.cache().length(draft_seq) - draft_at_last;
      draft.cache().set_length(draft_seq, draft_at_last + std::min<int64_t>(kept, evaluated));
      for (int32_t g = int32_t(evaluated) + 1; g <= kept; ++g) draft_behind.push_back(batch[size_t(g)]);
    }
    if (done) break;
  }
  // As generate() leaves it: the sequences hold every kept token, the last one too.
  draft_behind.push_back(last);
  ZINC_RETURN_IF_ERROR(target.decode(seq, std::span<const int32_t>(&last, 1), false).status());
  ZINC_RETURN_IF_ERROR(draft.decode(draft_seq, draft_behind, false).status());
  result.decode_seconds = std::chrono::duration<double>(clock::now() - t1).count();
  return result;
}

}  // namespace zinc::engine
