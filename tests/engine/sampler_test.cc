#include "engine/sampler.h"

#include <gtest/gtest.h>

#include <cmath>
#include <algorithm>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

namespace zinc::engine {
namespace {

SamplerParams off() {  // every step disabled; temperature 1
  SamplerParams p;
  p.temperature = 1.f;
  p.top_k = 0;
  p.top_p = 1.f;
  p.min_p = 0.f;
  p.penalty_last_n = 0;
  return p;
}

std::vector<int32_t> ids(const Sampler& s) {
  std::vector<int32_t> out;
  for (const auto& c : s.last_candidates()) out.push_back(c.id);
  return out;
}

TEST(Sampler, GreedyIsArgmaxAfterPenalties) {
  SamplerParams p = off();
  p.temperature = 0.f;
  Sampler s(p, 5);
  const std::vector<float> logits{0.1f, 2.f, 1.9f, -1.f, 0.f};
  EXPECT_EQ(s.sample(logits), 1);
  p.penalty_last_n = 4;
  p.repeat_penalty = 1.1f;  // 2.0 / 1.1 < 1.9
  Sampler pen(p, 5);
  pen.accept(1);
  EXPECT_EQ(pen.sample(logits), 2);
}

// OpenAI's logit_bias: added to the logits before anything else, so -100 bans a token and a
// bias decides between close ones; a biased greedy sampler is no longer a plain argmax.
TEST(Sampler, LogitBiasComesFirst) {
  SamplerParams p = off();
  p.temperature = 0.f;
  const std::vector<float> logits{0.1f, 2.f, 1.9f, -1.f, 0.f};
  p.logit_bias = {{1, -100.f}};
  Sampler ban(p, 5);
  EXPECT_FALSE(ban.greedy());
  EXPECT_EQ(ban.sample(logits), 2);
  p.logit_bias = {{3, 3.5f}, {99, 50.f}};  // ids past the vocabulary are left alone
  Sampler lift(p, 5);
  EXPECT_EQ(lift.sample(logits), 3);
  SamplerParams t = off();
  t.logit_bias = {{0, -100.f}, {1, -100.f}, {2, -100.f}, {3, -100.f}};
  Sampler only(t, 5);
  for (int i = 0; i < 20; ++i) EXPECT_EQ(only.sample(logits), 4);
}

TEST(Sampler, PenaltiesFollowTheFormula) {
  SamplerParams p = off();
  p.temperature = 0.f;
  p.penalty_last_n = 3;
  p.repeat_penalty = 2.f;
  p.frequency_penalty = 0.5f;
  p.presence_penalty = 0.25f;
  Sampler s(p, 4);
  for (int32_t t : {0, 3, 0, 1}) s.accept(t);  // window of 3: {3, 0, 1}; token 0's first use fell out
  // token 0: 4/2 - 1*0.5 - 0.25 = 1.25; token 1: -1*2 - 0.75 = -2.75; token 3: 3/2 - 0.75 = 0.75.
  EXPECT_EQ(s.sample(std::vector<float>{4.f, -1.f, 1.3f, 3.f}), 2);  // 1.3 beats 1.25
}

TEST(Sampler, TopKTopPMinPTruncateInOrder) {
  const std::vector<float> logits{3.f, 2.f, 1.f, 0.f, -1.f, -2.f};
  {
    SamplerParams p = off();
    p.top_k = 3;
    Sampler s(p, 6);
    s.sample(logits);
    EXPECT_EQ(ids(s), (std::vector<int32_t>{0, 1, 2}));
  }
  {
    // softmax: 0.6364 0.2341 0.0861 0.0317 ...; top-p 0.8 keeps the first two (0.87 >= 0.8).
    SamplerParams p = off();
    p.top_p = 0.8f;
    Sampler s(p, 6);
    s.sample(logits);
    EXPECT_EQ(ids(s), (std::vector<int32_t>{0, 1}));
  }
  {
    // min-p 0.1: keep logit >= 3 + ln 0.1 = 0.697.
    SamplerParams p = off();
    p.min_p = 0.1f;
    Sampler s(p, 6);
    s.sample(logits);
    EXPECT_EQ(ids(s), (std::vector<int32_t>{0, 1, 2}));
  }
}

TEST(Sampler, TemperatureComesAfterTruncation) {
  // With temperature 100 the distribution over the survivors is nearly flat, but top-k still saw
  // the untempered logits.
  SamplerParams p = off();
  p.top_k = 2;
  p.temperature = 100.f;
  Sampler s(p, 4);
  s.sample(std::vector<float>{0.f, 5.f, 4.f, 1.f});
  const auto c = s.last_candidates();
  ASSERT_EQ(c.size(), 2u);
  EXPECT_EQ(c[0].id, 1);
  EXPECT_EQ(c[1].id, 2);
  EXPECT_NEAR(c[0].p, 1.f / (1.f + std::exp(-0.01f)), 1e-5);
}

TEST(Sampler, DrawsFollowTheDistributionAndTheSeed) {
  const std::vector<float> logits{std::log(0.5f), std::log(0.3f), std::log(0.2f)};
  SamplerParams p = off();
  p.seed = 42;
  Sampler a(p, 3), b(p, 3);
  std::map<int32_t, int> counts;
  const int n = 20000;
  for (int i = 0; i < n; ++i) {
    const int32_t x = a.sample(logits);
    EXPECT_EQ(x, b.sample(logits));  // same seed, same stream
    counts[x]++;
  }
  EXPECT_NEAR(counts[0] / double(n), 0.5, 0.02);
  EXPECT_NEAR(counts[1] / double(n), 0.3, 0.02);
  EXPECT_NEAR(counts[2] / double(n), 0.2, 0.02);
  SamplerParams p42 = off(), p43 = off();
  p42.seed = 42;
  p43.seed = 43;
  Sampler c(p42, 3), d(p43, 3);
  int same = 0;
  for (int i = 0; i < 200; ++i) same += c.sample(logits) == d.sample(logits);
  EXPECT_LT(same, 200);  // another seed, another stream
}

// top-n-sigma: logits below max - n * std (of the finite logits) go.
TEST(Sampler, TopNSigmaDropsFarLogits) {
  SamplerParams p = off();
  p.top_n_sigma = 1.f;
  Sampler s(p, 6);
  const std::vector<float> logits{10.f, 9.f, 0.f, -1.f, -2.f, 8.f};
  // mean 4, std sqrt((36+25+16+25+36+16)/6) = 5.066: keep >= 4.934.
  s.sample(logits);
  EXPECT_EQ(ids(s), (std::vector<int32_t>{0, 1, 5}));
}

// Typical sampling keeps the tokens whose surprise is nearest the entropy, which here leaves out
// the most likely one.
TEST(Sampler, TypicalKeepsSurprisesNearTheEntropy) {
  SamplerParams p = off();
  p.typical_p = 0.3f;
  Sampler s(p, 4);
  s.sample(std::vector<float>{std::log(0.5f), std::log(0.2f), std::log(0.2f), std::log(0.1f)});
  EXPECT_EQ(ids(s), (std::vector<int32_t>{1, 2}));
}

// XTC (probability 1): every token at or above the threshold but the least likely of them goes.
TEST(Sampler, XtcRemovesTheTopChoices) {
  SamplerParams p = off();
  p.xtc_probability = 1.f;
  p.xtc_threshold = 0.1f;
  Sampler s(p, 4);
  const std::vector<float> logits{std::log(0.5f), std::log(0.3f), std::log(0.15f), std::log(0.05f)};
  s.sample(logits);
  EXPECT_EQ(ids(s), (std::vector<int32_t>{2, 3}));
  EXPECT_FALSE(s.greedy());
  p.temperature = 0.f;  // greedy after XTC: the best of what is left
  Sampler g(p, 4);
  EXPECT_FALSE(g.greedy());
  EXPECT_EQ(g.sample(logits), 2);
  p.xtc_probability = 0.f;
  Sampler off_xtc(p, 4);
  EXPECT_TRUE(off_xtc.greedy());
  EXPECT_EQ(off_xtc.sample(logits), 0);
}

// Dynamic temperature: T = lo + (hi - lo) * (H / H_max)^exponent over the candidates.
TEST(Sampler, DynamicTemperatureFollowsTheEntropy) {
  SamplerParams p = off();
  p.temperature = 1.f;
  p.dynatemp_range = 0.5f;
  p.dynatemp_exponent = 1.f;
  Sampler s(p, 2);
  const std::vector<float> logits{std::log(0.75f), std::log(0.25f)};
  s.sample(logits);
  const double h = -(0.75 * std::log(0.75) + 0.25 * std::log(0.25));
  const double t = 0.5 + 1.0 * h / std::log(2.0);
  const double p0 = 1.0 / (1.0 + std::exp((std::log(0.25) - std::log(0.75)) / t));
  const auto c = s.last_candidates();
  ASSERT_EQ(c.size(), 2u);
  for (const auto& x : c) EXPECT_NEAR(x.p, x.id == 0 ? p0 : 1 - p0, 1e-5);
}

// Mirostat steers the observed surprise (-log2 p of the drawn token) toward tau.
TEST(Sampler, MirostatHoldsTheSurpriseNearTau) {
  std::vector<float> logits(256);
  for (size_t i = 0; i < logits.size(); ++i) logits[i] = -1.1f * std::log(float(i + 1));  // Zipf-like
  double z = 0;
  for (float l : logits) z += std::exp(double(l));
  for (int version : {1, 2}) {
    SamplerParams p = off();
    p.mirostat = version;
    p.mirostat_tau = 3.f;
    p.mirostat_eta = 0.1f;
    p.seed = 11;
    Sampler s(p, 256);
    EXPECT_FALSE(s.greedy());
    double surprise = 0;
    const int n = 3000;
    size_t kept = 0;
    for (int i = 0; i < n; ++i) {
      const int32_t id = s.sample(logits);
      for (const auto& c : s.last_candidates())  // as mirostat observes it: among the candidates it kept
        if (c.id == id) surprise += -std::log2(double(c.p));
      kept += s.last_candidates().size();
    }
    EXPECT_NEAR(surprise / n, 3.0, 0.3) << "mirostat " << version;
    EXPECT_LT(kept / double(n), 64.0) << "mirostat " << version;  // it truncates
  }
  // Without it, this distribution's entropy (the mean surprise of plain draws) is far above 3 bits.
  double entropy = 0;
  for (float l : logits) {
    const double q = std::exp(double(l)) / z;
    entropy -= q * std::log2(q);
  }
  EXPECT_GT(entropy, 4.0);
}

// DRY: a token that would extend a repeat of at least allowed_length tokens loses
// multiplier * base^(length - allowed_length); breakers cap the length; a token that is a breaker
// on its own is exempt.
TEST(Dry, PenalisesTheTokenThatExtendsARepeat) {
  DryParams p;
  p.multiplier = 0.8f;
  p.base = 2.f;
  p.allowed_length = 2;
  std::vector<int32_t> scratch;
  std::unordered_map<int32_t, int32_t> max_repeat;
  std::vector<std::pair<int32_t, float>> out;
  auto run = [&](std::vector<int32_t> history) {
    dry_penalties(p, history, scratch, max_repeat, &out);
    return out;
  };
  using Pen = std::vector<std::pair<int32_t, float>>;
  EXPECT_EQ(run({5, 1, 2, 3, 1, 2}), (Pen{{3, 0.8f}}));        // "1 2" again: 3 would make it three
  EXPECT_EQ(run({1, 2, 3, 4, 1, 2, 3}), (Pen{{4, 1.6f}}));     // a repeat of 3: base^1
  EXPECT_TRUE(run({1, 2, 3, 1}).empty());                      // a repeat of 1 < allowed_length
  EXPECT_EQ(run({9, 1, 2, 3, 9, 1, 2}), (Pen{{3, 1.6f}}));     // "9 1 2": three
  auto breakers = std::make_shared<DryBreakers>();
  breakers->heads.emplace(9, std::vector<int32_t>());        // token 9 is a breaker
  breakers->heads.emplace(5, std::vector<int32_t>{6});       // so is 5 followed by 6
  p.breakers = breakers;
  EXPECT_EQ(run({9, 1, 2, 3, 9, 1, 2}), (Pen{{3, 0.8f}}));     // the repeat stops at the 9
  EXPECT_TRUE(run({1, 2, 9, 4, 1, 2}).empty());                // 9 is exempt
  EXPECT_EQ(run({5, 6, 1, 2, 3, 5, 6, 1, 2}), (Pen{{3, 0.8f}}));  // capped at "1 2" by "5 6"
  p.breakers = nullptr;
  EXPECT_EQ(run({5, 6, 1, 2, 3, 5, 6, 1, 2}), (Pen{{3, 3.2f}}));  // else "5 6 1 2": base^2
  p.penalty_last_n = 3;  // only the last three tokens: no repeat in them
  EXPECT_TRUE(run({5, 6, 1, 2, 3, 5, 6, 1, 2}).empty());
  p.penalty_last_n = -1;
  p.multiplier = 0.f;
  EXPECT_TRUE(run({5, 1, 2, 3, 1, 2}).empty());
}

TEST(Dry, BreakersFromTheVocabulary) {
  const std::vector<std::string> pieces{"a", "\n", "b:", "xa", ":y", "q"};
  auto encode = [&](const std::string& text) {
    std::vector<int32_t> out;
    for (char c : text)
      for (size_t i = 0; i < pieces.size(); ++i)
        if (pieces[i] == std::string(1, c)) out.push_back(int32_t(i));
    return out;
  };
  auto b = DryBreakers::build(int32_t(pieces.size()), {"\n", ":", "aq"}, [&](int32_t id) { return pieces[size_t(id)]; }, encode);
  auto tails = [&](int32_t id) {
    std::vector<std::vector<int32_t>> t;
    for (auto [it, end] = b->heads.equal_range(id); it != end; ++it) t.push_back(it->second);
    std::sort(t.begin(), t.end());
    return t;
  };
  using Tails = std::vector<std::vector<int32_t>>;
  EXPECT_EQ(tails(1), (Tails{{}}));      // "\n" holds a breaker
  EXPECT_EQ(tails(2), (Tails{{}}));      // "b:" too
  EXPECT_EQ(tails(4), (Tails{{}}));      // ":y"
  EXPECT_EQ(tails(0), (Tails{{5}}));     // "a" starts "aq": the rest, "q", follows
  EXPECT_EQ(tails(3), (Tails{{5}}));     // "xa" ends with it
  EXPECT_TRUE(tails(5).empty());

  // Through the sampler: the penalty lands before the draw, and the sampler is no longer greedy.
  SamplerParams p = off();
  p.temperature = 0.f;
  p.dry.multiplier = 1.f;
  p.dry.base = 2.f;
  p.dry.allowed_length = 2;
  Sampler s(p, 6);
  EXPECT_FALSE(s.greedy());
  for (int32_t t : {0, 5, 2, 0, 5}) s.accept(t);  // "a q" again: 2 would extend it
  EXPECT_EQ(s.sample(std::vector<float>{0.f, 0.f, 2.f, 1.5f, 0.f, 0.f}), 3);
}

}  // namespace
}  // namespace zinc::engine
