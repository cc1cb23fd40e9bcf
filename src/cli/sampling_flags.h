// The sampling flags that run and chat share (llama.cpp's names), bound to one SamplerParams.
#pragma once

#include <CLI/CLI.hpp>

#include "engine/sampler.h"

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
}

}  // namespace zinc::cli
