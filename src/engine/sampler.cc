#include "engine/sampler.h"

#include <algorithm>
#include <cmath>

#include "core/check.h"

namespace zinc::engine {

namespace {
constexpr size_t kDryWindow = 32768;  // DRY's look-back with penalty_last_n -1 (llama.cpp: the training context)
bool by_logit(const Candidate& a, const Candidate& b) { return a.logit > b.logit || (a.logit == b.logit && a.id < b.id); }
}  // namespace

Sampler::Sampler(const SamplerParams& params, int32_t n_vocab)
    : params_(params),
      n_vocab_(n_vocab),
      rng_(params.seed),
      xtc_rng_(params.seed),
      mu_(2.0f * params.mirostat_tau),
      cands_(size_t(n_vocab)),
      counts_(size_t(n_vocab), 0) {
  ZINC_CHECK(n_vocab > 0);
  const int32_t n = params.penalty_last_n < 0 ? 4096 : params.penalty_last_n;
  window_.resize(size_t(std::max(n, 0)));
  params_.min_keep = std::max(params_.min_keep, 1);
  if (params_.dry.on()) history_cap_ = params_.dry.penalty_last_n < 0 ? kDryWindow : size_t(params_.dry.penalty_last_n);
}

void Sampler::accept(int32_t token) {
  if (history_cap_ > 0) {
    history_.push_back(token);
    if (history_.size() >= 2 * history_cap_) history_.erase(history_.begin(), history_.end() - long(history_cap_));
  }
  if (window_.empty()) return;
  window_[window_pos_] = token;
  window_pos_ = (window_pos_ + 1) % window_.size();
  window_fill_ = std::min(window_fill_ + 1, window_.size());
}

void Sampler::reset() {
  window_pos_ = window_fill_ = 0;
  history_.clear();
  mu_ = 2.0f * params_.mirostat_tau;
}

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

void Sampler::apply_dry() {
  if (history_cap_ == 0) return;
  const size_t n = std::min(history_.size(), history_cap_);
  dry_penalties(params_.dry, std::span<const int32_t>(history_).last(n), dry_repeat_, dry_max_, &dry_out_);
  for (const auto& [token, penalty] : dry_out_)
    if (token >= 0 && token < n_vocab_) cands_[size_t(token)].logit -= penalty;  // still in id order
}

void Sampler::sort_desc() {
  if (sorted_) return;
  std::sort(cands_.begin(), cands_.begin() + long(n_cands_), by_logit);
  sorted_ = true;
}

void Sampler::softmax() {
  float max = cands_[0].logit;
  for (size_t i = 1; i < n_cands_; ++i) max = std::max(max, cands_[i].logit);
  double sum = 0;
  for (size_t i = 0; i < n_cands_; ++i) sum += (cands_[i].p = std::exp(cands_[i].logit - max));
  for (size_t i = 0; i < n_cands_; ++i) cands_[i].p = float(cands_[i].p / sum);
}

void Sampler::top_n_sigma() {
  if (params_.top_n_sigma <= 0.f || n_cands_ <= 1) return;
  double sum = 0, max = -INFINITY;
  size_t valid = 0;
  for (size_t i = 0; i < n_cands_; ++i)
    if (std::isfinite(cands_[i].logit)) {
      sum += cands_[i].logit;
      max = std::max(max, double(cands_[i].logit));
      ++valid;
    }
  if (valid == 0) return;
  const double mean = sum / double(valid);
  double acc = 0;
  for (size_t i = 0; i < n_cands_; ++i)
    if (std::isfinite(cands_[i].logit)) acc += (cands_[i].logit - mean) * (cands_[i].logit - mean);
  const double threshold = max - params_.top_n_sigma * std::sqrt(acc / double(valid));
  sort_desc();
  size_t last = n_cands_;
  for (size_t i = size_t(params_.min_keep); i < n_cands_; ++i)
    if (cands_[i].logit < threshold) {
      last = i;
      break;
    }
  n_cands_ = last;
}

void Sampler::top_k(size_t k) {
  k = std::max(k, size_t(params_.min_keep));
  if (k >= n_cands_) return;
  std::partial_sort(cands_.begin(), cands_.begin() + long(k), cands_.begin() + long(n_cands_), by_logit);
  n_cands_ = k;
  sorted_ = true;
}

// Keeps the tokens whose surprise is closest to the distribution's entropy, the shortest such set
// holding more than typical_p of the probability.
void Sampler::typical() {
  if (params_.typical_p >= 1.f || n_cands_ <= 1) return;
  sort_desc();
  softmax();
  double entropy = 0;
  for (size_t i = 0; i < n_cands_; ++i)
    if (cands_[i].p > 0.f) entropy -= double(cands_[i].p) * std::log(double(cands_[i].p));
  auto shift = [entropy](const Candidate& c) { return std::fabs(-std::log(double(c.p)) - entropy); };
  std::stable_sort(cands_.begin(), cands_.begin() + long(n_cands_), [&](const Candidate& a, const Candidate& b) { return shift(a) < shift(b); });
  double cum = 0;
  size_t last = n_cands_;
  for (size_t i = 0; i < n_cands_; ++i) {
    cum += cands_[i].p;
    if (cum > params_.typical_p && i + 1 >= size_t(params_.min_keep)) {
      last = i + 1;
      break;
    }
  }
  n_cands_ = last;
  sorted_ = false;
}

void Sampler::top_p() {
  if (params_.top_p >= 1.f) return;
  sort_desc();
  softmax();
  double cum = 0;
  for (size_t i = 0; i < n_cands_; ++i) {
    cum += cands_[i].p;
    if (cum >= params_.top_p && i + 1 >= size_t(params_.min_keep)) {
      n_cands_ = i + 1;
      return;
    }
  }
}

void Sampler::min_p() {
  if (params_.min_p <= 0.f) return;
  sort_desc();
  const float threshold = cands_[0].logit + std::log(params_.min_p);
  for (size_t i = size_t(params_.min_keep); i < n_cands_; ++i)
    if (cands_[i].logit < threshold) {
      n_cands_ = i;
      return;
    }
}

// Exclude Top Choices: with xtc_probability, every candidate at or above the threshold but the
// least likely of them is removed.
void Sampler::xtc() {
  if (params_.xtc_probability <= 0.f || params_.xtc_threshold > 0.5f || n_cands_ < 2) return;
  std::uniform_real_distribution<float> u(0.f, 1.f);
  if (u(xtc_rng_) > params_.xtc_probability) return;
  sort_desc();
  softmax();
  size_t last_top = 0;
  for (size_t i = 0; i < n_cands_ && cands_[i].p >= params_.xtc_threshold; ++i) last_top = i;
  if (last_top == 0 || n_cands_ - last_top < size_t(params_.min_keep)) return;
  std::move(cands_.begin() + long(last_top), cands_.begin() + long(n_cands_), cands_.begin());
  n_cands_ -= last_top;
}

// The temperature; with dynatemp_range, one between temp - range and temp + range by the
// candidates' entropy relative to its maximum.
void Sampler::temperature(float t) {
  if (params_.dynatemp_range > 0.f && params_.mirostat == 0) {
    if (n_cands_ <= 1) return;
    const float lo = std::max(0.f, t - params_.dynatemp_range), hi = t + params_.dynatemp_range;
    softmax();
    double entropy = 0;
    for (size_t i = 0; i < n_cands_; ++i)
      if (cands_[i].p > 0.f) entropy -= double(cands_[i].p) * std::log(double(cands_[i].p));
    t = lo + (hi - lo) * float(std::pow(entropy / std::log(double(n_cands_)), double(params_.dynatemp_exponent)));
  }
  if (t <= 0.f) {
    argmax();
    return;
  }
  for (size_t i = 0; i < n_cands_; ++i) cands_[i].logit /= t;
}

int32_t Sampler::argmax() {
  size_t best = 0;
  for (size_t i = 1; i < n_cands_; ++i)
    if (cands_[i].logit > cands_[best].logit) best = i;
  std::swap(cands_[0], cands_[best]);
  n_cands_ = 1;
  cands_[0].p = 1.f;
  sorted_ = true;
  return cands_[0].id;
}

int32_t Sampler::draw() {
  softmax();
  // A uniform double in [0, 1) scaled by the sum, walked along the candidates.
  std::uniform_real_distribution<double> u(0.0, 1.0);
  const double r = u(rng_);
  double cum = 0;
  for (size_t i = 0; i < n_cands_; ++i) {
    cum += cands_[i].p;
    if (r < cum) return cands_[i].id;
  }
  return cands_[n_cands_ - 1].id;
}

// Mirostat (v1: top-k from the estimated Zipf exponent; v2: drop tokens more surprising than
// mu), then a draw; mu follows the observed surprise toward tau.
int32_t Sampler::mirostat() {
  sort_desc();
  softmax();
  if (params_.mirostat == 1 && n_cands_ > 1) {
    constexpr size_t kM = 100;
    double sum_tb = 0, sum_tt = 0;
    for (size_t i = 0; i + 1 < kM && i + 1 < n_cands_; ++i) {
      const double t = std::log(double(i + 2) / double(i + 1)), b = std::log(double(cands_[i].p) / double(cands_[i + 1].p));
      sum_tb += t * b;
      sum_tt += t * t;
    }
    const double s_hat = sum_tb / sum_tt, eps = s_hat - 1;
    const double k = std::pow(eps * std::pow(2.0, double(mu_)) / (1 - std::pow(double(n_vocab_), -eps)), 1 / s_hat);
    top_k(std::isfinite(k) && k >= 1 ? size_t(std::min(k, double(n_vocab_))) : 1);
  } else if (params_.mirostat == 2) {
    size_t keep = 0;
    while (keep < n_cands_ && -std::log2(cands_[keep].p) <= mu_) ++keep;
    n_cands_ = std::max<size_t>(keep, 1);
  }
  const int32_t id = draw();
  float p = 1.f;
  for (size_t i = 0; i < n_cands_; ++i)
    if (cands_[i].id == id) p = cands_[i].p;
  mu_ -= params_.mirostat_eta * (-std::log2(p) - params_.mirostat_tau);
  return id;
}

bool Sampler::greedy() const {
  const bool penalties = params_.penalty_last_n != 0 && (params_.repeat_penalty != 1.f ||
                                                         params_.frequency_penalty != 0.f ||
                                                         params_.presence_penalty != 0.f);
  const bool xtc = params_.xtc_probability > 0.f && params_.xtc_threshold <= 0.5f;
  return params_.temperature <= 0.f && params_.dynatemp_range <= 0.f && !penalties && params_.logit_bias.empty() &&
         !params_.dry.on() && !xtc && params_.mirostat == 0;
}

int32_t Sampler::sample(std::span<const float> logits) {
  ZINC_CHECK(int64_t(logits.size()) == n_vocab_);
  for (int32_t i = 0; i < n_vocab_; ++i) cands_[size_t(i)] = {i, logits[size_t(i)], 0.f};
  n_cands_ = size_t(n_vocab_);
  sorted_ = false;
  for (const auto& [id, bias] : params_.logit_bias)
    if (id >= 0 && id < n_vocab_) cands_[size_t(id)].logit += bias;
  if (params_.mirostat == 1 || params_.mirostat == 2) {
    temperature(params_.temperature);
    return mirostat();
  }
  apply_penalties();
  apply_dry();
  // Without a temperature the truncation steps keep the best candidate; only XTC can drop it.
  const bool fixed = params_.temperature <= 0.f && params_.dynatemp_range <= 0.f;
  if (fixed && !(params_.xtc_probability > 0.f && params_.xtc_threshold <= 0.5f)) return argmax();
  top_n_sigma();
  if (params_.top_k > 0) top_k(size_t(params_.top_k));
  typical();
  top_p();
  min_p();
  xtc();
  if (fixed) return argmax();
  temperature(params_.temperature);
  if (n_cands_ == 1) {
    cands_[0].p = 1.f;
    return cands_[0].id;
  }
  return draw();
}

}  // namespace zinc::engine
