#include "engine/sampler.h"

#include <algorithm>
#include <cmath>

#include "core/check.h"

namespace zinc::engine {

Sampler::Sampler(const SamplerParams& params, int32_t n_vocab)
    : params_(params), n_vocab_(n_vocab), rng_(params.seed), cands_(size_t(n_vocab)), counts_(size_t(n_vocab), 0) {
  ZINC_CHECK(n_vocab > 0);
  const int32_t n = params.penalty_last_n < 0 ? 4096 : params.penalty_last_n;
  window_.resize(size_t(std::max(n, 0)));
  params_.min_keep = std::max(params_.min_keep, 1);
}

void Sampler::accept(int32_t token) {
  if (window_.empty()) return;
  window_[window_pos_] = token;
  window_pos_ = (window_pos_ + 1) % window_.size();
  window_fill_ = std::min(window_fill_ + 1, window_.size());
}

void Sampler::reset() { window_pos_ = window_fill_ = 0; }

void Sampler::apply_penalties() {
  const bool on = params_.repeat_penalty != 1.f || params_.frequency_penalty != 0.f || params_.presence_penalty != 0.f;
  if (!on || window_fill_ == 0) return;
  for (size_t i = 0; i < window_fill_; ++i) {
    const int32_t t = window_[i];
    if (t >= 0 && t < n_vocab_) counts_[size_t(t)]++;
  }
  for (size_t i = 0; i < window_fill_; ++i) {
    const int32_t t = window_[i];
    if (t < 0 || t >= n_vocab_ || counts_[size_t(t)] == 0) continue;  // handled already
    const int32_t c = counts_[size_t(t)];
    float& l = cands_[size_t(t)].logit;  // candidates are still in id order here
    l = l > 0.f ? l / params_.repeat_penalty : l * params_.repeat_penalty;
    l -= float(c) * params_.frequency_penalty + params_.presence_penalty;
    counts_[size_t(t)] = 0;
  }
}

void Sampler::sort_desc() {
  if (sorted_) return;
  std::sort(cands_.begin(), cands_.begin() + long(n_cands_),
            [](const Candidate& a, const Candidate& b) { return a.logit > b.logit || (a.logit == b.logit && a.id < b.id); });
  sorted_ = true;
}

void Sampler::softmax() {
  float max = cands_[0].logit;
  for (size_t i = 1; i < n_cands_; ++i) max = std::max(max, cands_[i].logit);
  double sum = 0;
  for (size_t i = 0; i < n_cands_; ++i) sum += (cands_[i].p = std::exp(cands_[i].logit - max));
  for (size_t i = 0; i < n_cands_; ++i) cands_[i].p = float(cands_[i].p / sum);
}

bool Sampler::greedy() const {
  const bool penalties = params_.penalty_last_n != 0 && (params_.repeat_penalty != 1.f ||
                                                         params_.frequency_penalty != 0.f ||
                                                         params_.presence_penalty != 0.f);
  return params_.temperature <= 0.f && !penalties && params_.logit_bias.empty();
}

int32_t Sampler::sample(std::span<const float> logits) {
  ZINC_CHECK(int64_t(logits.size()) == n_vocab_);
  for (int32_t i = 0; i < n_vocab_; ++i) cands_[size_t(i)] = {i, logits[size_t(i)], 0.f};
  n_cands_ = size_t(n_vocab_);
  sorted_ = false;
  for (const auto& [id, bias] : params_.logit_bias)
    if (id >= 0 && id < n_vocab_) cands_[size_t(id)].logit += bias;
  apply_penalties();

  if (params_.temperature <= 0.f) {  // greedy
    size_t best = 0;
    for (size_t i = 1; i < n_cands_; ++i)
      if (cands_[i].logit > cands_[best].logit) best = i;
    std::swap(cands_[0], cands_[best]);
    n_cands_ = 1;
    cands_[0].p = 1.f;
    return cands_[0].id;
  }
  const size_t keep = size_t(params_.min_keep);
  if (params_.top_k > 0 && size_t(params_.top_k) < n_cands_) {
    const size_t k = std::max(size_t(params_.top_k), keep);
    std::partial_sort(cands_.begin(), cands_.begin() + long(k), cands_.begin() + long(n_cands_),
                      [](const Candidate& a, const Candidate& b) { return a.logit > b.logit || (a.logit == b.logit && a.id < b.id); });
    n_cands_ = std::min(k, n_cands_);
    sorted_ = true;
  }
  if (params_.top_p < 1.f) {
    sort_desc();
    softmax();
    double cum = 0;
    size_t last = n_cands_;
    for (size_t i = 0; i < n_cands_; ++i) {
      cum += cands_[i].p;
      if (cum >= params_.top_p && i + 1 >= keep) {
        last = i + 1;
        break;
      }
    }
    n_cands_ = last;
  }
  if (params_.min_p > 0.f) {
    sort_desc();
    const float threshold = cands_[0].logit + std::log(params_.min_p);
    size_t last = n_cands_;
    for (size_t i = keep; i < n_cands_; ++i)
      if (cands_[i].logit < threshold) {
        last = i;
        break;
      }
    n_cands_ = last;
  }
  for (size_t i = 0; i < n_cands_; ++i) cands_[i].logit /= params_.temperature;
  softmax();
  // Draw: a uniform double in [0, 1) scaled by the sum, walked along the candidates.
  std::uniform_real_distribution<double> u(0.0, 1.0);
  double r = u(rng_), cum = 0;
  for (size_t i = 0; i < n_cands_; ++i) {
    cum += cands_[i].p;
    if (r < cum) return cands_[i].id;
  }
  return cands_[n_cands_ - 1].id;
}

}  // namespace zinc::engine
