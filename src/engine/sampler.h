// Token sampling per model-spec 5: llama.cpp's chain logit bias -> penalties -> DRY ->
// top-n-sigma -> top-k -> typical -> top-p -> min-p -> XTC -> temperature (dynamic with a range)
// -> draw, with temperature applied after the truncation steps; with mirostat (1 or 2) the chain
// is logit bias -> temperature -> mirostat instead. A seed makes the draws reproducible. Buffers
// are sized once for the vocabulary: sampling allocates nothing but DRY's scratch.
#pragma once

#include <cstdint>
#include <random>
#include <span>
#include <unordered_map>
#include <utility>
#include <vector>

#include "engine/dry.h"

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
  DryParams dry;                   // off unless dry.multiplier != 0
  float top_n_sigma = -1.0f;       // <= 0: off; else drop logits below max - n * (their std)
  float typical_p = 1.0f;          // >= 1: off
  float xtc_probability = 0.0f;    // 0: off; the chance that XTC removes the top choices
  float xtc_threshold = 0.1f;      // a top choice has at least this probability (> 0.5: off)
  float dynatemp_range = 0.0f;     // > 0: temperature in [temp - range, temp + range] by the entropy
  float dynatemp_exponent = 1.0f;
  int32_t mirostat = 0;            // 0: off; 1 or 2: that version, instead of the truncation chain
  float mirostat_tau = 5.0f;       // target surprise (bits)
  float mirostat_eta = 0.1f;       // learning rate
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
  // Whether sample() is the plain argmax of the logits (temperature <= 0, and nothing before
  // the temperature that can change the winner: bias, penalties, DRY, XTC).
  bool greedy() const;
  // Adds a token to the penalty window (prompt tokens too, as llama.cpp does).
  void accept(int32_t token);
  void reset();  // forgets the window and mirostat's state; the random stream continues

  // The candidates left by the last sample() before the draw (sorted by logit, descending,
  // except when no truncation step ran), with their final probabilities.
  std::span<const Candidate> last_candidates() const { return {cands_.data(), n_cands_}; }

 private:
  void apply_penalties();
  void apply_dry();
  void top_n_sigma();
  void top_k(size_t k);
  void typical();
  void top_p();
  void min_p();
  void xtc();
  void temperature(float t);
  int32_t argmax();  // the best candidate, alone
  int32_t draw();    // softmax and a draw
  int32_t mirostat();
  void sort_desc();
  void softmax();

  SamplerParams params_;
  int32_t n_vocab_;
  std::mt19937 rng_;
  std::mt19937 xtc_rng_;  // XTC's own stream, as llama.cpp's XTC sampler has
  float mu_ = 0.0f;       // mirostat's running maximum surprise
  std::vector<int32_t> history_;  // accepted tokens, oldest first, for DRY (trimmed in halves)
  size_t history_cap_ = 0;
  std::vector<int32_t> dry_repeat_;
  std::unordered_map<int32_t, int32_t> dry_max_;
  std::vector<std::pair<int32_t, float>> dry_out_;
  std::vector<Candidate> cands_;
  size_t n_cands_ = 0;
  bool sorted_ = false;
  std::vector<int32_t> window_;  // ring buffer of accepted tokens
  size_t window_pos_ = 0, window_fill_ = 0;
  std::vector<int32_t> counts_;  // scratch: occurrences per token in the window
};

}  // namespace zinc::engine
