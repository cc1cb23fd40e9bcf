#include "engine/sampler.h"

#include <gtest/gtest.h>

#include <cmath>
#include <map>

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

}  // namespace
}  // namespace zinc::engine
