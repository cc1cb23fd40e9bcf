// The sampling flags that run and chat share (llama.cpp's names), bound to one SamplerParams.
#pragma once

#include <CLI/CLI.hpp>

#include "engine/sampler.h"
#include "tokenizer/tokenizer.h"

namespace zinc::cli {

inline void add_sampling_flags(CLI::App& sub, engine::SamplerParams& s) {
  sub.add_option("--temp", s.temperature, "Temperature (<= 0: greedy)")->capture_default_str();
  sub.add_option("--top-k", s.top_k, "Top-k (0: off)")->capture_default_str();
  sub.add_option("--top-p", s.top_p, "Top-p (1: off)")->capture_default_str();
  sub.add_option("--min-p", s.min_p, "Min-p (0: off)")->capture_default_str();
  sub.add_option("--repeat-last-n", s.penalty_last_n, "Penalty window (0: off, -1: all)")->capture_default_str();
  sub.add_option("--repeat-penalty", s.repeat_penalty, "Repetition penalty (1: off)")->capture_default_str();
  sub.add_option("--presence-penalty", s.presence_penalty, "Presence penalty")->capture_default_str();
  sub.add_option("--frequency-penalty", s.frequency_penalty, "Frequency penalty")->capture_default_str();
  sub.add_option("-s,--seed", s.seed, "Random seed")->capture_default_str();
  sub.add_option("--min-keep", s.min_keep, "Candidates every truncation step keeps at least")->capture_default_str();
  sub.add_option("--typical", s.typical_p, "Locally typical sampling (1: off)")->capture_default_str();
  sub.add_option("--top-nsigma", s.top_n_sigma, "Drop logits below max - n * std (<= 0: off)")->capture_default_str();
  sub.add_option("--xtc-probability", s.xtc_probability, "Chance XTC removes the top choices (0: off)")->capture_default_str();
  sub.add_option("--xtc-threshold", s.xtc_threshold, "XTC's top-choice probability (> 0.5: off)")->capture_default_str();
  sub.add_option("--dynatemp-range", s.dynatemp_range, "Dynamic temperature: temp +/- this by the entropy (0: off)")->capture_default_str();
  sub.add_option("--dynatemp-exp", s.dynatemp_exponent, "Dynamic temperature exponent")->capture_default_str();
  sub.add_option("--dry-multiplier", s.dry.multiplier, "DRY repetition penalty multiplier (0: off)")->capture_default_str();
  sub.add_option("--dry-base", s.dry.base, "DRY base")->capture_default_str();
  sub.add_option("--dry-allowed-length", s.dry.allowed_length, "DRY: repeats up to this long go unpenalised")->capture_default_str();
  sub.add_option("--dry-penalty-last-n", s.dry.penalty_last_n, "DRY look-back in tokens (-1: all, 0: off)")->capture_default_str();
  sub.add_option_function<std::vector<std::string>>(
      "--dry-sequence-breaker",
      [&s](const std::vector<std::string>& v) {
        s.dry.sequence_breakers.clear();
        for (const auto& b : v)
          if (b != "none" && !b.empty()) s.dry.sequence_breakers.push_back(b);
      },
      "DRY sequence breaker (repeatable; replaces the defaults \\n : \" *; 'none': no breakers)");
  sub.add_option("--mirostat", s.mirostat, "Mirostat version (0: off, 1, 2); replaces the truncation steps")
      ->capture_default_str()
      ->check(CLI::Range(0, 2));
  sub.add_option("--mirostat-ent", s.mirostat_tau, "Mirostat target entropy (tau)")->capture_default_str();
  sub.add_option("--mirostat-lr", s.mirostat_eta, "Mirostat learning rate (eta)")->capture_default_str();
}

// The sampling flags made ready for a model: DRY's breakers as its tokens.
inline engine::SamplerParams prepared_sampling(engine::SamplerParams s, const tokenizer::Tokenizer* tok) {
  if (s.dry.on() && tok) s.dry.breakers = engine::DryBreakers::of(*tok, s.dry.sequence_breakers);
  return s;
}

}  // namespace zinc::cli
