// The continuous-batching scheduler on stories260K: batched sequences decode the tokens each gets
// alone, chunked prefill changes nothing, cancellation frees pages, the prefix cache reuses pages
// without changing the logits, and bad requests end with an error.
#include "engine/scheduler.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "model/model.h"
#include "support/test_data.h"

namespace zinc::engine {
namespace {

using namespace std::chrono_literals;

std::unique_ptr<model::Model> load(const std::string& rel) {
  auto m = model::Model::load(test::data_path(rel));
  EXPECT_TRUE(m.ok()) << m.status().message();
  return m.ok() ? std::move(m).value() : nullptr;
}

std::vector<int32_t> some_tokens(size_t n, int32_t seed) {
  std::vector<int32_t> t(n);
  t[0] = 1;  // BOS
  for (size_t i = 1; i < n; ++i) t[i] = int32_t((seed + 131 * i) % 500 + 3);
  return t;
}

struct Outcome {
  std::vector<int32_t> tokens;
  std::vector<float> logprobs;
  Event done;
};

Outcome collect(Stream& s) {
  Outcome o;
  for (;;) {
    auto e = s.next(60s);
    if (!e) {
      ADD_FAILURE() << "no event within 60 s";
      return o;
    }
    if (e->kind == Event::Kind::kDone) {
      o.done = *e;
      return o;
    }
    o.tokens.push_back(e->token);
    o.logprobs.push_back(e->logprob);
  }
}

struct Setup {
  std::unique_ptr<Runner> runner;
  std::unique_ptr<Scheduler> scheduler;
};

Setup make(const model::Model& m, int32_t parallel, int64_t chunk = 256, size_t prefixes = 64,
           Backend backend = Backend::kCpu) {
  RunnerOptions ro;
  ro.backend = backend;
  ro.n_threads = 2;
  ro.max_seqs = parallel;
  ro.n_ctx = 512 * parallel;
  Setup s;
  auto runner = Runner::create(m, ro);
  if (!runner.ok()) return s;  // no such backend here
  s.runner = std::move(*runner);
  SchedulerOptions so;
  so.parallel = parallel;
  so.n_ctx = 512;
  so.prefill_chunk = chunk;
  so.max_cached_prefixes = prefixes;
  s.scheduler = std::make_unique<Scheduler>(*s.runner, so);
  return s;
}

Request greedy(std::vector<int32_t> prompt, int32_t n) {
  Request r;
  r.prompt = std::move(prompt);
  r.sampling.temperature = 0;
  r.max_tokens = n;
  r.top_logprobs = 0;
  return r;
}

TEST(Scheduler, BatchedSequencesMatchOneAtATime) {
  ZINC_REQUIRE_TEST_DATA();
  auto m = load("models/stories260K.gguf");
  ASSERT_TRUE(m);
  const std::vector<std::vector<int32_t>> prompts = {some_tokens(5, 1), some_tokens(40, 2), some_tokens(130, 3),
                                                     some_tokens(17, 4), some_tokens(9, 5)};
  std::vector<Outcome> alone;
  {
    auto s = make(*m, 1, 256, 0);
    for (const auto& p : prompts) alone.push_back(collect(*s.scheduler->submit(greedy(p, 24))));
  }
  // Four at a time (the fifth queues), prompts prefilled 32 tokens per step among decoding streams.
  auto s = make(*m, 4, 32, 0);
  std::vector<std::shared_ptr<Stream>> streams;
  for (const auto& p : prompts) streams.push_back(s.scheduler->submit(greedy(p, 24)));
  for (size_t i = 0; i < prompts.size(); ++i) {
    Outcome o = collect(*streams[i]);
    EXPECT_EQ(o.tokens, alone[i].tokens) << "prompt " << i;
    EXPECT_EQ(o.done.finish, alone[i].done.finish);
    ASSERT_EQ(o.logprobs.size(), alone[i].logprobs.size());
    for (size_t t = 0; t < o.logprobs.size(); ++t) EXPECT_NEAR(o.logprobs[t], alone[i].logprobs[t], 1e-4) << i << ":" << t;
    EXPECT_EQ(o.done.prompt_tokens, int64_t(prompts[i].size()));
    EXPECT_EQ(o.done.completion_tokens, int64_t(o.tokens.size()));
  }
  EXPECT_EQ(s.scheduler->stats().kv_pages_used, 0);  // no prefix cache: every page is back
}

TEST(Scheduler, SeededSamplingIsReproducibleInABatch) {
  ZINC_REQUIRE_TEST_DATA();
  auto m = load("models/stories260K.gguf");
  ASSERT_TRUE(m);
  Request r;
  r.prompt = some_tokens(12, 9);
  r.sampling.temperature = 1.0f;
  r.sampling.seed = 1234;
  r.max_tokens = 32;
  auto s = make(*m, 3, 256, 0);
  auto other = s.scheduler->submit(greedy(some_tokens(50, 3), 40));
  auto a = s.scheduler->submit(r);
  auto b = s.scheduler->submit(r);
  const auto ta = collect(*a).tokens, tb = collect(*b).tokens;
  collect(*other);
  EXPECT_EQ(ta, tb);
  EXPECT_FALSE(ta.empty());
}

// Allows exactly `want`, in order, and is finished after its last token.
class Script : public TokenConstraint {
 public:
  explicit Script(std::vector<int32_t> want) : want_(std::move(want)) {}
  void mask(std::span<float> logits) const override {
    for (size_t i = 0; i < logits.size(); ++i)
      if (int32_t(i) != want_[next_]) logits[i] = -INFINITY;
  }
  void accept(int32_t token) override {
    EXPECT_EQ(token, want_[next_]);
    ++next_;
  }
  bool finished() const override { return next_ == want_.size(); }

 private:
  std::vector<int32_t> want_;
  size_t next_ = 0;
};

TEST(Scheduler, ConstraintsChooseTheTokensAndEndTheRequest) {
  ZINC_REQUIRE_TEST_DATA();
  auto m = load("models/stories260K.gguf");
  ASSERT_TRUE(m);
  auto s = make(*m, 2, 256, 0);
  const std::vector<int32_t> want = {300, 17, 299, 42};
  Request r;
  r.prompt = some_tokens(10, 4);
  r.sampling.temperature = 1.0f;
  r.sampling.seed = 5;
  r.max_tokens = 32;
  r.top_logprobs = 0;
  r.constraint = std::make_shared<Script>(want);
  auto other = s.scheduler->submit(greedy(some_tokens(20, 6), 12));  // unconstrained, in the same steps
  Outcome o = collect(*s.scheduler->submit(r));
  EXPECT_EQ(o.tokens, want);
  EXPECT_EQ(o.done.finish, FinishReason::kStop);
  EXPECT_EQ(o.done.completion_tokens, int64_t(want.size()));
  for (float lp : o.logprobs) EXPECT_TRUE(std::isfinite(lp));  // from the raw row, not the masked one
  Outcome free = collect(*other);
  EXPECT_EQ(free.tokens.size(), 12u);
}

TEST(Scheduler, CancelFreesTheSequenceAndItsPages) {
  ZINC_REQUIRE_TEST_DATA();
  auto m = load("models/stories260K.gguf");
  ASSERT_TRUE(m);
  auto s = make(*m, 2, 256, 0);
  auto stream = s.scheduler->submit(greedy(some_tokens(100, 1), 400));
  auto first = stream->next(60s);
  ASSERT_TRUE(first && first->kind == Event::Kind::kToken);
  EXPECT_GT(s.scheduler->stats().kv_pages_used, 0);
  stream->cancel();
  Outcome rest = collect(*stream);
  EXPECT_EQ(rest.done.finish, FinishReason::kCancelled);
  EXPECT_LT(rest.done.completion_tokens, 400);
  EXPECT_EQ(s.scheduler->stats().kv_pages_used, 0);
  EXPECT_EQ(s.scheduler->stats().active, 0);
  // A cancelled request that never started ends too.
  auto busy = s.scheduler->submit(greedy(some_tokens(10, 1), 50));
  auto busy2 = s.scheduler->submit(greedy(some_tokens(10, 2), 50));
  auto waiting = s.scheduler->submit(greedy(some_tokens(10, 3), 50));
  waiting->cancel();
  EXPECT_EQ(collect(*waiting).done.finish, FinishReason::kCancelled);
  collect(*busy);
  collect(*busy2);
}

// Runs `prompt` on a scheduler of its own (nothing cached) and checks that `cached` (the same
// request where a prefix was reused) drew the same tokens with the same log-probabilities. On
// Vulkan the cached tokens' K/V come from decode steps (matvec, decode attention) and the fresh
// ones from a prefill (GEMM, prefill attention): other summation orders, rounded to the f16
// cache. Logits agree to ~1e-9 nmse, log-probabilities to a few 1e-4.
Outcome expect_as_fresh(const model::Model& m, const Outcome& cached, const std::vector<int32_t>& prompt, int32_t n, Backend backend) {
  auto fresh_s = make(m, 1, 256, 0, backend);
  Outcome fresh = collect(*fresh_s.scheduler->submit(greedy(prompt, n)));
  EXPECT_EQ(fresh.done.cached_tokens, 0);
  EXPECT_EQ(cached.tokens, fresh.tokens);
  EXPECT_EQ(cached.logprobs.size(), fresh.logprobs.size());
  const double tol = backend == Backend::kCpu ? 1e-4 : 3e-3;
  for (size_t t = 0; t < std::min(cached.logprobs.size(), fresh.logprobs.size()); ++t)
    EXPECT_NEAR(cached.logprobs[t], fresh.logprobs[t], tol) << t;
  return fresh;
}

class SchedulerPrefix : public ::testing::TestWithParam<Backend> {};

TEST_P(SchedulerPrefix, PrefixReuseGivesTheSameTokensAndLogits) {
  ZINC_REQUIRE_TEST_DATA();
  auto m = load("models/stories260K.gguf");
  ASSERT_TRUE(m);
  auto s = make(*m, 2, 256, 64, GetParam());
  if (!s.runner) GTEST_SKIP() << "no Vulkan device";
  const auto turn1 = some_tokens(70, 5);
  Outcome o1 = collect(*s.scheduler->submit(greedy(turn1, 20)));
  EXPECT_EQ(o1.done.cached_tokens, 0);
  // The second turn: the first prompt, the reply, and new tokens.
  std::vector<int32_t> turn2 = turn1;
  turn2.insert(turn2.end(), o1.tokens.begin(), o1.tokens.end());
  for (int32_t t : some_tokens(23, 8)) turn2.push_back(t == 1 ? 2 : t);
  Outcome cached = collect(*s.scheduler->submit(greedy(turn2, 20)));
  // Everything the cache held: the first prompt and all but the last reply token.
  EXPECT_EQ(cached.done.cached_tokens, int64_t(turn1.size() + o1.tokens.size() - 1));
  expect_as_fresh(*m, cached, turn2, 20, GetParam());
  // The same prompt again reuses all but its last token; a different one shares only BOS.
  EXPECT_EQ(collect(*s.scheduler->submit(greedy(turn2, 4))).done.cached_tokens, int64_t(turn2.size()) - 1);
  const auto stats = s.scheduler->stats();
  EXPECT_GT(stats.prompt_tokens_cached, 0);
  EXPECT_GT(stats.cached_prefixes, 0);
  EXPECT_GT(stats.kv_pages_used, 0);  // held by the cached prefixes
}

// On Vulkan the partly filled last page of a prefix is copied on the device.
INSTANTIATE_TEST_SUITE_P(Backends, SchedulerPrefix, ::testing::Values(Backend::kCpu, Backend::kVulkan),
                         [](const auto& info) { return info.param == Backend::kCpu ? "Cpu" : "Vulkan"; });

// A hybrid model (Gated DeltaNet layers) caches snapshots: at the request's checkpoint, or before
// the last prompt token. A later prompt resumes from the longest snapshot it holds whole, with the
// tokens and log-probabilities of a fresh run.
class SchedulerHybridPrefix : public ::testing::TestWithParam<Backend> {};

TEST_P(SchedulerHybridPrefix, SnapshotsGiveTheSameTokensAndLogits) {
  ZINC_REQUIRE_TEST_DATA();
  auto m = load("models/qwen35-f32.gguf");
  ASSERT_TRUE(m);
  auto s = make(*m, 2, 16, 64, GetParam());
  if (!s.runner) GTEST_SKIP() << "no Vulkan device";
  ASSERT_TRUE(s.scheduler->caches_at_checkpoints());
  const auto turn1 = some_tokens(40, 3);
  Request r1 = greedy(turn1, 6);
  r1.checkpoint = 27;  // the history: not a chunk boundary
  Outcome o1 = collect(*s.scheduler->submit(r1));
  EXPECT_EQ(o1.done.cached_tokens, 0);
  std::vector<int32_t> turn2(turn1.begin(), turn1.begin() + 27);
  for (int32_t t : some_tokens(15, 9)) turn2.push_back(t == 1 ? 2 : t);
  Outcome cached = collect(*s.scheduler->submit(greedy(turn2, 6)));
  EXPECT_EQ(cached.done.cached_tokens, 27);
  const Outcome fresh = expect_as_fresh(*m, cached, turn2, 6, GetParam());
  // turn2 had no checkpoint: it was snapshotted before its last token, so it runs again from there.
  Outcome again = collect(*s.scheduler->submit(greedy(turn2, 6)));
  EXPECT_EQ(again.done.cached_tokens, int64_t(turn2.size()) - 1);
  EXPECT_EQ(again.tokens, fresh.tokens);
  // A prompt that leaves every snapshot before its end shares nothing.
  std::vector<int32_t> other = turn1;
  other[20] = other[20] == 7 ? 8 : 7;
  EXPECT_EQ(collect(*s.scheduler->submit(greedy(other, 2))).done.cached_tokens, 0);
  EXPECT_GE(s.scheduler->stats().cached_prefixes, 2);

  // A request with a checkpoint (a chat turn) is also kept where it ends: the next turn, which
  // repeats the answer, prefills only what follows it (the last token sampled was never fed).
  const auto history = some_tokens(20, 5);
  Request chat = greedy(history, 5);
  chat.checkpoint = 12;
  const Outcome answered = collect(*s.scheduler->submit(chat));
  ASSERT_EQ(answered.tokens.size(), 5u);
  std::vector<int32_t> next = history;
  next.insert(next.end(), answered.tokens.begin(), answered.tokens.end());
  for (int32_t t : some_tokens(7, 11)) next.push_back(t == 1 ? 2 : t);
  Outcome continued = collect(*s.scheduler->submit(greedy(next, 4)));
  EXPECT_EQ(continued.done.cached_tokens, int64_t(history.size()) + 4);
  expect_as_fresh(*m, continued, next, 4, GetParam());
}

INSTANTIATE_TEST_SUITE_P(Backends, SchedulerHybridPrefix, ::testing::Values(Backend::kCpu, Backend::kVulkan),
                         [](const auto& info) { return info.param == Backend::kCpu ? "Cpu" : "Vulkan"; });

// Scored prompts (Request::prompt_logprobs): every prompt token comes back, in order, before the
// answer, the first unscored and the rest with the log-softmax of the row before them (checked
// against one Runner::decode of the whole prompt), in chunks among other streams; the answer is the
// unscored request's, and max_tokens 0 scores without generating.
TEST(Scheduler, ScoredPromptsGiveEveryTokensLogprob) {
  ZINC_REQUIRE_TEST_DATA();
  auto m = load("models/stories260K.gguf");
  ASSERT_TRUE(m);
  const auto prompt = some_tokens(150, 7);  // more than one scored chunk
  std::vector<float> expected(prompt.size(), 0.0f);
  std::vector<int32_t> expected_top(prompt.size(), -1);
  {
    auto ref = make(*m, 1, 256, 0);
    auto seq = ref.runner->cache().add_sequence();
    ASSERT_TRUE(seq.ok());
    auto logits = ref.runner->decode(*seq, prompt, true);
    ASSERT_TRUE(logits.ok()) << logits.status().message();
    const size_t n_vocab = m->hparams().n_vocab;
    for (size_t i = 1; i < prompt.size(); ++i) {
      const float* row = logits->data() + (i - 1) * n_vocab;
      double z = 0;
      const float mx = *std::max_element(row, row + n_vocab);
      for (size_t v = 0; v < n_vocab; ++v) z += std::exp(double(row[v] - mx));
      expected[i] = row[prompt[i]] - mx - float(std::log(z));
      expected_top[i] = int32_t(std::max_element(row, row + n_vocab) - row);
    }
  }
  auto s = make(*m, 3, 32, 64);
  const Outcome plain = collect(*s.scheduler->submit(greedy(prompt, 8)));  // leaves the prompt cached
  auto other = s.scheduler->submit(greedy(some_tokens(60, 3), 30));       // decoding beside it
  Request scored = greedy(prompt, 8);
  scored.prompt_logprobs = 2;
  auto stream = s.scheduler->submit(scored);
  std::vector<Event> prompt_events, answer;
  Event done;
  for (;;) {
    auto e = stream->next(60s);
    ASSERT_TRUE(e.has_value());
    if (e->kind == Event::Kind::kDone) {
      done = *e;
      break;
    }
    if (e->kind == Event::Kind::kPrompt) {
      EXPECT_TRUE(answer.empty()) << "a prompt token after the answer began";
      prompt_events.push_back(*e);
    } else {
      answer.push_back(*e);
    }
  }
  ASSERT_EQ(prompt_events.size(), prompt.size());
  EXPECT_FALSE(prompt_events[0].scored);
  for (size_t i = 0; i < prompt.size(); ++i) {
    EXPECT_EQ(prompt_events[i].token, prompt[i]) << i;
    if (i == 0) continue;
    EXPECT_TRUE(prompt_events[i].scored) << i;
    EXPECT_NEAR(prompt_events[i].logprob, expected[i], 1e-3) << i;
    ASSERT_EQ(prompt_events[i].top.size(), 2u) << i;
    EXPECT_EQ(prompt_events[i].top[0].token, expected_top[i]) << i;
    EXPECT_EQ(prompt_events[i].rank == 1, prompt_events[i].token == expected_top[i]) << i;
    EXPECT_GE(prompt_events[i].rank, 1) << i;
    EXPECT_GE(prompt_events[i].top[0].logprob, prompt_events[i].logprob - 1e-6) << i;
  }
  EXPECT_EQ(done.cached_tokens, 0);  // scored: computed whole, though the cache holds it
  std::vector<int32_t> answer_tokens;
  for (const Event& e : answer) answer_tokens.push_back(e.token);
  EXPECT_EQ(answer_tokens, plain.tokens);
  EXPECT_EQ(collect(*other).tokens.size(), 30u);

  Request only = greedy(std::vector<int32_t>(prompt.begin(), prompt.begin() + 20), 0);
  only.prompt_logprobs = 0;
  const Outcome scored_only = collect(*s.scheduler->submit(only));
  EXPECT_EQ(scored_only.tokens.size(), 20u);  // the prompt events, no answer
  EXPECT_EQ(scored_only.done.finish, FinishReason::kLength);
  EXPECT_EQ(scored_only.done.completion_tokens, 0);
  for (size_t i = 1; i < 20; ++i) EXPECT_NEAR(scored_only.logprobs[i], expected[i], 1e-3) << i;
  // Without prompt scores, max_tokens 0 is still an error.
  EXPECT_EQ(collect(*s.scheduler->submit(greedy(prompt, 0))).done.finish, FinishReason::kError);
}

TEST(Scheduler, BadRequestsEndWithAnError) {
  ZINC_REQUIRE_TEST_DATA();
  auto m = load("models/stories260K.gguf");
  ASSERT_TRUE(m);
  auto s = make(*m, 1);
  EXPECT_EQ(collect(*s.scheduler->submit(greedy({}, 4))).done.finish, FinishReason::kError);
  Outcome too_long = collect(*s.scheduler->submit(greedy(some_tokens(512, 1), 4)));
  EXPECT_EQ(too_long.done.finish, FinishReason::kError);
  EXPECT_NE(too_long.done.error.find("512"), std::string::npos) << too_long.done.error;
  EXPECT_EQ(collect(*s.scheduler->submit(greedy({1, 100000}, 4))).done.finish, FinishReason::kError);
  // The context bounds the completion: finish = length at 512 tokens.
  Outcome full = collect(*s.scheduler->submit(greedy(some_tokens(500, 1), 100)));
  EXPECT_EQ(full.done.finish, FinishReason::kLength) << full.done.error;
  EXPECT_EQ(full.done.prompt_tokens + full.done.completion_tokens, 512);
}

}  // namespace
}  // namespace zinc::engine
