// Token sampling per model-spec 5: the llama.cpp chain logit bias -> penalties -> top-k -> top-p -> min-p ->
// temperature -> draw, with temperature applied after the truncation steps. A seed makes the
// draws reproducible. Buffers are sized once for the vocabulary: sampling allocates nothing.
#pragma once

#include <cstdint>
#include <random>
#include <span>
#include <utility>
#include <vector>

namespace zinc::engine {

struct SamplerParams {
  float temperature = 0.8f;        // <= 0: greedy (argmax after penalties)
  int32_t top_k = 40;              // <= 0: off
  float top_p = 0.95f;             // >= 1: off
  float min_p = 0.05f;             // <= 0: off
  int32_t penalty_last_n = 64;     // window of accepted tokens the penalties look at (0: off, -1: all)
  float repeat_penalty = 1.0f;     // 1: off
  float frequency_penalty = 0.0f;  // 0: off
  float presence_penalty = 0.0f;   // 0: off
  uint32_t seed = 0;
  int32_t min_keep = 1;            // truncation keeps at least this many candidates
  std::vector<std::pair<int32_t, float>> logit_bias;  // (token, added to its logit) before every other step
};

struct Candidate {
  int32_t id;
  float logit;
  float p;
};

class Sampler {
 public:
  Sampler(const SamplerParams& params, int32_t n_vocab);

  // Picks the next token from one row of logits [n_vocab].
  int32_t sample(std::span<const float> logits);
  // Whether sample() is the plain argmax of the logits (temperature <= 0, no penalties or bias).
  bool greedy() const;
  // Adds a token to the penalty window (prompt tokens too, as llama.cpp does).
  void accept(int32_t token);
  void reset();  // forgets the window; the random stream continues

  // The candidates left by the last sample() before the draw (sorted by logit, descending,
  // except when no truncation step ran), with their final probabilities.
  std::span<const Candidate> last_candidates() const { return {cands_.data(), n_cands_}; }

 private:
  void apply_penalties();
  void sort_desc();
  void softmax();

  SamplerParams params_;
  int32_t n_vocab_;
  std::mt19937 rng_;
  std::vector<Candidate> cands_;
  size_t n_cands_ = 0;
  bool sorted_ = false;
  std::vector<int32_t> window_;  // ring buffer of accepted tokens
  size_t window_pos_ = 0, window_fill_ = 0;
  std::vector<int32_t> counts_;  // scratch: occurrences per token in the window
};

}  // namespace zinc::engine
