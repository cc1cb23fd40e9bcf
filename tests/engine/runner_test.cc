#include "engine/runner.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "core/quant.h"
#include "engine/generate.h"
#include "gguf/file.h"
#include "model/model.h"
#include "support/test_data.h"

namespace zinc::engine {
namespace {

std::unique_ptr<model::Model> load(const std::string& rel) {
  auto m = model::Model::load(test::data_path(rel));
  EXPECT_TRUE(m.ok()) << m.status().message();
  return m.ok() ? std::move(m).value() : nullptr;
}

std::vector<int32_t> some_tokens(size_t n, int32_t seed) {
  std::vector<int32_t> t(n);
  for (size_t i = 0; i < n; ++i) t[i] = int32_t((seed + 131 * i) % 500 + 3);
  return t;
}

double max_abs_diff(std::span<const float> a, std::span<const float> b) {
  double d = 0;
  for (size_t i = 0; i < a.size(); ++i) d = std::max(d, double(std::fabs(a[i] - b[i])));
  return d;
}

// Whether the Vulkan cases can run: a device (lavapipe in CI) exists.
bool have_vulkan() {
  static const bool ok = [] {
    auto inst = vulkan::Instance::create();
    return inst.ok() && !(*inst)->devices().empty();
  }();
  return ok;
}

// Logits of `tokens` run alone on a fresh runner, one batch.
std::vector<float> alone(const model::Model& m, const std::vector<int32_t>& tokens, Backend backend = Backend::kCpu) {
  RunnerOptions o;
  o.backend = backend;
  o.n_threads = 2;
  o.n_ctx = 64;
  auto r = Runner::create(m, o);
  const kv::SeqId s = (*r)->cache().add_sequence().value();
  auto rows = (*r)->decode(s, tokens, true);
  EXPECT_TRUE(rows.ok()) << rows.status().message();
  return std::vector<float>(rows->begin(), rows->end());
}

// Two sequences interleaved in one batch (the second joining late) give the logits each gets
// alone: attention, delta-net state and MoE routing all stay per sequence. On Vulkan, against
// the CPU's logits.
struct MixedCase {
  const char* model;
  Backend backend;
};

class MixedBatch : public testing::TestWithParam<MixedCase> {};

TEST_P(MixedBatch, EqualsEachSequenceAlone) {
  ZINC_REQUIRE_TEST_DATA();
  const Backend backend = GetParam().backend;
  if (backend == Backend::kVulkan && !have_vulkan()) GTEST_SKIP() << "no Vulkan device";
  auto m = load(GetParam().model);
  ASSERT_TRUE(m);
  const auto a = some_tokens(21, 1), b = some_tokens(9, 7);
  const auto ref_a = alone(*m, a), ref_b = alone(*m, b);
  const size_t V = m->hparams().n_vocab;
  const double tolerance = backend == Backend::kCpu ? 1e-4 : 1e-3;

  RunnerOptions o;
  o.backend = backend;
  o.n_threads = 2;
  o.n_ctx = 64;
  o.max_seqs = 2;
  auto r = Runner::create(*m, o);
  ASSERT_TRUE(r.ok());
  const kv::SeqId sa = (*r)->cache().add_sequence().value(), sb = (*r)->cache().add_sequence().value();
  // Step 1: a[0..12) alone. Step 2: a[12..21) interleaved with all of b.
  ASSERT_TRUE((*r)->decode(sa, std::span<const int32_t>(a).first(12), true).ok());
  std::vector<int32_t> tokens, positions, seqs, rows;
  std::vector<std::pair<kv::SeqId, size_t>> who;
  size_t ia = 12, ib = 0;
  while (ia < a.size() || ib < b.size()) {
    if (ib < b.size()) {
      tokens.push_back(b[ib]), positions.push_back(int32_t(ib)), seqs.push_back(sb), who.push_back({sb, ib++});
    }
    if (ia < a.size()) {
      tokens.push_back(a[ia]), positions.push_back(int32_t(ia)), seqs.push_back(sa), who.push_back({sa, ia++});
    }
  }
  for (size_t i = 0; i < tokens.size(); ++i) rows.push_back(int32_t(i));
  auto out = (*r)->decode(graph::Batch{tokens, positions, seqs, rows});
  ASSERT_TRUE(out.ok()) << out.status().message();
  for (size_t i = 0; i < who.size(); ++i) {
    const auto& ref = who[i].first == sa ? ref_a : ref_b;
    const std::span<const float> got = out->subspan(i * V, V), want(&ref[who[i].second * V], V);
    EXPECT_LT(max_abs_diff(got, want), tolerance) << "batch row " << i;
  }
  EXPECT_EQ((*r)->cache().length(sa), 21);
  EXPECT_EQ((*r)->cache().length(sb), 9);
}

std::string case_name(const char* model, Backend backend) {
  std::string s = model;
  s = s.substr(7, s.find('.') - 7);
  for (char& c : s)
    if (c == '-') c = '_';
  return s + (backend == Backend::kVulkan ? "_vulkan" : "");
}

INSTANTIATE_TEST_SUITE_P(Models, MixedBatch,
                         testing::Values(MixedCase{"models/llama-f32.gguf", Backend::kCpu},
                                         MixedCase{"models/qwen3moe-f32.gguf", Backend::kCpu},
                                         MixedCase{"models/qwen35moe-f32.gguf", Backend::kCpu},
                                         MixedCase{"models/qwen35moe-f32.gguf", Backend::kVulkan}),
                         [](const auto& info) { return case_name(info.param.model, info.param.backend); });

// A saved recurrent state written back rewinds the sequence (the same logits again), and a
// cleared sequence starts from zero state (on Vulkan the state lives on the device).
class RecurrentState : public testing::TestWithParam<Backend> {};

TEST_P(RecurrentState, SaveRestoreRewindsAndClearStartsOver) {
  ZINC_REQUIRE_TEST_DATA();
  if (GetParam() == Backend::kVulkan && !have_vulkan()) GTEST_SKIP() << "no Vulkan device";
  auto m = load("models/qwen35-f32.gguf");
  ASSERT_TRUE(m);
  const auto a = some_tokens(12, 5), b = some_tokens(5, 9);
  RunnerOptions o;
  o.backend = GetParam();
  o.n_threads = 2;
  o.n_ctx = 64;
  auto r = Runner::create(*m, o);
  ASSERT_TRUE(r.ok()) << r.status().message();
  const kv::SeqId s = (*r)->cache().add_sequence().value();
  ASSERT_TRUE((*r)->decode(s, a, false).ok());
  auto saved = (*r)->save_recurrent_state(s);
  ASSERT_TRUE(saved.ok()) << saved.status().message();
  ASSERT_FALSE(saved->empty());
  auto first_rows = (*r)->decode(s, b, true);
  ASSERT_TRUE(first_rows.ok());
  const std::vector<float> first(first_rows->begin(), first_rows->end());
  ASSERT_TRUE((*r)->restore_recurrent_state(s, *saved).ok());
  (*r)->cache().set_length(s, int64_t(a.size()));
  auto again = (*r)->decode(s, b, true);
  ASSERT_TRUE(again.ok());
  EXPECT_LT(max_abs_diff(*again, first), 1e-6);
  EXPECT_FALSE((*r)->restore_recurrent_state(s, std::vector<float>(3)).ok());

  (*r)->cache().clear(s);
  auto fresh = (*r)->decode(s, a, true);
  ASSERT_TRUE(fresh.ok());
  const auto ref = alone(*m, a);
  EXPECT_LT(max_abs_diff(*fresh, ref), GetParam() == Backend::kCpu ? 1e-5 : 1e-3);
}

INSTANTIATE_TEST_SUITE_P(Backends, RecurrentState, testing::Values(Backend::kCpu, Backend::kVulkan),
                         [](const auto& info) { return std::string(info.param == Backend::kCpu ? "cpu" : "vulkan"); });

// A greedy chain (each step's argmax fed to the next on the device, the next step queued early)
// gives the tokens and the cache of decode_greedy step by step; stopped early by its callback it
// leaves the sequence at the last accepted step, whatever step was queued behind it.
struct ChainCase {
  const char* model;
  Backend backend;
};

class GreedyChain : public testing::TestWithParam<ChainCase> {};

int32_t argmax_of(std::span<const float> row) {
  return int32_t(std::max_element(row.begin(), row.end()) - row.begin());
}

TEST_P(GreedyChain, MatchesStepByStep) {
  ZINC_REQUIRE_TEST_DATA();
  const ChainCase c = GetParam();
  if (c.backend == Backend::kVulkan && !have_vulkan()) GTEST_SKIP() << "no Vulkan device";
  auto m = load(c.model);
  ASSERT_TRUE(m);
  RunnerOptions o;
  o.backend = c.backend;
  o.n_threads = 2;
  o.n_ctx = 64;
  auto r = Runner::create(*m, o);
  ASSERT_TRUE(r.ok()) << r.status().message();
  Runner& run = **r;
  const kv::SeqId s = run.cache().add_sequence().value();
  const auto prompt = some_tokens(9, 3);
  constexpr int kSteps = 7, kStop = 3;
  const int32_t probe = 77;  // decoded after each run: the state the steps left behind

  // Step by step: the tokens, and the logits of the probe after all steps and after kStop.
  std::vector<int32_t> want;
  std::vector<float> probe_all, probe_stop;
  for (int stop : {kSteps, kStop}) {
    run.cache().clear(s);
    ASSERT_TRUE(run.decode(s, prompt, false).ok());
    int32_t t = prompt.back() + 1;
    for (int i = 0; i < stop; ++i) {
      auto next = run.decode_greedy(s, std::span<const int32_t>(&t, 1));
      ASSERT_TRUE(next.ok()) << next.status().message();
      t = *next;
      if (stop == kSteps) want.push_back(t);
    }
    auto rows = run.decode(s, std::span<const int32_t>(&probe, 1), false);
    ASSERT_TRUE(rows.ok());
    (stop == kSteps ? probe_all : probe_stop).assign(rows->begin(), rows->end());
  }

  run.cache().clear(s);
  ASSERT_TRUE(run.decode(s, prompt, false).ok());
  std::vector<int32_t> got;
  double gpu_ns = 0;
  auto steps = run.decode_greedy_chain(s, prompt.back() + 1, kSteps, [&](int32_t t) {
    got.push_back(t);
    return true;
  }, &gpu_ns);
  ASSERT_TRUE(steps.ok()) << steps.status().message();
  EXPECT_EQ(*steps, kSteps);
  EXPECT_EQ(got, want);
  EXPECT_EQ(run.cache().length(s), int64_t(prompt.size()) + kSteps);
  auto rows = run.decode(s, std::span<const int32_t>(&probe, 1), false);
  ASSERT_TRUE(rows.ok());
  EXPECT_EQ(argmax_of(*rows), argmax_of(probe_all));
  EXPECT_LT(max_abs_diff(*rows, probe_all), 1e-5);

  // Without a callback (all steps queued two deep, recurrent models too).
  run.cache().clear(s);
  ASSERT_TRUE(run.decode(s, prompt, false).ok());
  steps = run.decode_greedy_chain(s, prompt.back() + 1, kSteps);
  ASSERT_TRUE(steps.ok());
  EXPECT_EQ(*steps, kSteps);
  rows = run.decode(s, std::span<const int32_t>(&probe, 1), false);
  ASSERT_TRUE(rows.ok());
  EXPECT_LT(max_abs_diff(*rows, probe_all), 1e-5);

  // Stopped by the callback after kStop steps.
  run.cache().clear(s);
  ASSERT_TRUE(run.decode(s, prompt, false).ok());
  got.clear();
  steps = run.decode_greedy_chain(s, prompt.back() + 1, kSteps, [&](int32_t t) {
    got.push_back(t);
    return int(got.size()) < kStop;
  });
  ASSERT_TRUE(steps.ok());
  EXPECT_EQ(*steps, kStop);
  EXPECT_EQ(got, std::vector<int32_t>(want.begin(), want.begin() + kStop));
  EXPECT_EQ(run.cache().length(s), int64_t(prompt.size()) + kStop);
  rows = run.decode(s, std::span<const int32_t>(&probe, 1), false);
  ASSERT_TRUE(rows.ok());
  EXPECT_LT(max_abs_diff(*rows, probe_stop), 1e-5);

  // More steps than the context holds: an error before any step runs.
  const int64_t len = run.cache().length(s);
  EXPECT_FALSE(run.decode_greedy_chain(s, 5, 1000).ok());
  EXPECT_EQ(run.cache().length(s), len);
}

// One-token decode steps on Vulkan across vulkan::ops::AttentionO::kMaxKeys keys give the CPU's
// logits: the recordings with the attention fused into the output projection up to there, the
// ones with both ops after (Qwen3.5's attention has its output gate; the MoE models' output
// projection carries their folded router, whose norm inputs the two recordings count apart).
TEST(VulkanDecode, AcrossTheShortContextMatchesCpu) {
  ZINC_REQUIRE_TEST_DATA();
  if (!have_vulkan()) GTEST_SKIP() << "no Vulkan device";
  constexpr int64_t kPrompt = 250, kSteps = 12;  // positions 250..261 around 256 keys
  // (Not qwen35moe: with 2 of 8 random experts its routing flips on near ties at some positions,
  // on either recording.)
  for (const char* model : {"models/llama-q8_0.gguf", "models/qwen35-q8_0.gguf", "models/qwen3moe-q8_0.gguf"}) {
    SCOPED_TRACE(model);
    auto m = load(model);
    ASSERT_TRUE(m);
    std::unique_ptr<Runner> runners[2];
    for (Backend b : {Backend::kCpu, Backend::kVulkan}) {
      RunnerOptions o;
      o.backend = b;
      o.n_threads = 2;
      o.n_ctx = 288;
      auto r = Runner::create(*m, o);
      ASSERT_TRUE(r.ok()) << r.status().message();
      runners[b == Backend::kCpu ? 0 : 1] = std::move(*r);
    }
    const auto prompt = some_tokens(kPrompt + kSteps, 11);
    kv::SeqId seqs[2];
    for (int i = 0; i < 2; ++i) {
      seqs[i] = runners[i]->cache().add_sequence().value();
      ASSERT_TRUE(runners[i]->decode(seqs[i], std::span<const int32_t>(prompt).first(kPrompt), false).ok());
    }
    for (int64_t p = kPrompt; p < kPrompt + kSteps; ++p) {
      std::vector<float> logits[2];
      for (int i = 0; i < 2; ++i) {
        auto rows = runners[i]->decode(seqs[i], std::span<const int32_t>(&prompt[size_t(p)], 1), false);
        ASSERT_TRUE(rows.ok()) << rows.status().message();
        logits[i].assign(rows->begin(), rows->end());
      }
      double err = 0, ref = 0;
      for (size_t i = 0; i < logits[0].size(); ++i) {
        err += double(logits[1][i] - logits[0][i]) * (logits[1][i] - logits[0][i]);
        ref += double(logits[0][i]) * logits[0][i];
      }
      // The int8 activations' own difference from the CPU is 1.5-5 % on these models; a head's
      // partial products left out, or the stream or the partials misplaced, give tens of %.
      EXPECT_LT(std::sqrt(err / ref), 0.1) << "position " << p;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Models, GreedyChain,
                         testing::Values(ChainCase{"models/llama-f32.gguf", Backend::kCpu},
                                         ChainCase{"models/llama-f32.gguf", Backend::kVulkan},
                                         ChainCase{"models/qwen35moe-f32.gguf", Backend::kVulkan}),
                         [](const auto& info) { return case_name(info.param.model, info.param.backend); });

// generate() with a greedy sampler on Vulkan (the device chain) gives what decode and argmax on
// the host give, stopping at stop tokens, the limit and the callback with the same cache length.
TEST(Generate, GreedyOnVulkanMatchesHostArgmax) {
  ZINC_REQUIRE_TEST_DATA();
  if (!have_vulkan()) GTEST_SKIP() << "no Vulkan device";
  auto m = load("models/llama-f32.gguf");
  ASSERT_TRUE(m);
  RunnerOptions o;
  o.backend = Backend::kVulkan;
  o.n_threads = 2;
  o.n_ctx = 64;
  auto r = Runner::create(*m, o);
  ASSERT_TRUE(r.ok()) << r.status().message();
  const kv::SeqId s = (*r)->cache().add_sequence().value();
  const auto prompt = some_tokens(6, 11);
  constexpr int kMax = 12;
  std::vector<int32_t> want;
  auto logits = (*r)->decode(s, prompt, false);
  ASSERT_TRUE(logits.ok());
  for (int i = 0; i < kMax; ++i) {
    want.push_back(argmax_of(*logits));
    logits = (*r)->decode(s, std::span<const int32_t>(&want.back(), 1), false);
    ASSERT_TRUE(logits.ok());
  }

  SamplerParams sp;
  sp.temperature = 0;
  sp.repeat_penalty = 1.0f;
  const int32_t n_vocab = int32_t(m->hparams().n_vocab);
  GenerateOptions go;
  go.max_new_tokens = kMax;
  (*r)->cache().clear(s);
  Sampler a(sp, n_vocab);
  ASSERT_TRUE(a.greedy());
  std::vector<int32_t> streamed;
  auto res = generate(**r, s, prompt, a, go, [&](int32_t t) {
    streamed.push_back(t);
    return true;
  });
  ASSERT_TRUE(res.ok()) << res.status().message();
  EXPECT_EQ(res->tokens, want);
  EXPECT_EQ(streamed, want);
  EXPECT_EQ(res->reason, StopReason::kMaxTokens);
  EXPECT_EQ((*r)->cache().length(s), int64_t(prompt.size()) + kMax);

  // A stop token at the 6th: five tokens, all decoded, the stop token not.
  (*r)->cache().clear(s);
  Sampler b(sp, n_vocab);
  go.stop_tokens = {want[5]};
  res = generate(**r, s, prompt, b, go);
  ASSERT_TRUE(res.ok());
  const auto first_stop = std::find(want.begin(), want.end(), want[5]) - want.begin();
  EXPECT_EQ(res->reason, StopReason::kEndOfGeneration);
  EXPECT_EQ(res->tokens, std::vector<int32_t>(want.begin(), want.begin() + first_stop));
  EXPECT_EQ((*r)->cache().length(s), int64_t(prompt.size()) + first_stop);

  // The callback stops after the 4th token, which is decoded.
  (*r)->cache().clear(s);
  Sampler c(sp, n_vocab);
  go.stop_tokens.clear();
  int seen = 0;
  res = generate(**r, s, prompt, c, go, [&](int32_t) { return ++seen < 4; });
  ASSERT_TRUE(res.ok());
  EXPECT_EQ(res->reason, StopReason::kCallback);
  EXPECT_EQ(res->tokens, std::vector<int32_t>(want.begin(), want.begin() + 4));
  EXPECT_EQ((*r)->cache().length(s), int64_t(prompt.size()) + 4);
}

// Embeddings are the final-norm hidden states the logits come from (the output matrix times the
// last token's embedding points along its logits), pooled as asked and of length 1; a causal
// model's first-token pooling is the first token alone; Vulkan gives the CPU's.
TEST(Runner, EmbeddingsAreTheHiddenStatesOfTheLogits) {
  ZINC_REQUIRE_TEST_DATA();
  auto m = load("models/llama-f32.gguf");
  ASSERT_TRUE(m);
  const std::vector<int32_t> tokens = some_tokens(20, 7);
  const int64_t n_embd = m->hparams().n_embd, n_vocab = m->hparams().n_vocab;
  const std::vector<float> logits = alone(*m, tokens);
  const std::span<const float> last_logits(logits.data() + (tokens.size() - 1) * size_t(n_vocab), size_t(n_vocab));
  const gguf::TensorInfo* w = m->file().find_tensor("output.weight");
  if (!w) w = m->file().find_tensor("token_embd.weight");
  ASSERT_TRUE(w);
  auto embed = [&](Backend backend, std::span<const int32_t> t, Runner::Pooling pooling) {
    RunnerOptions o;
    o.backend = backend;
    o.n_threads = 2;
    o.n_ctx = 64;
    o.max_batch = 8;  // several steps
    auto r = Runner::create(*m, o);
    EXPECT_TRUE(r.ok());
    auto e = (*r)->embed(t, pooling);
    EXPECT_TRUE(e.ok()) << e.status().message();
    EXPECT_EQ((*r)->cache().used_pages(), 0);  // its sequence is gone
    return e.ok() ? *e : std::vector<float>();
  };
  const std::vector<float> last = embed(Backend::kCpu, tokens, Runner::Pooling::kLast);
  ASSERT_EQ(last.size(), size_t(n_embd));
  std::vector<float> row(static_cast<size_t>(n_embd));
  std::vector<double> z(static_cast<size_t>(n_vocab));
  double zz = 0, zl = 0, ll = 0;
  for (int64_t v = 0; v < n_vocab; ++v) {
    dequantize_row(w->type, w->data + size_t(v) * w->row_bytes(), row.data(), n_embd);
    for (int64_t j = 0; j < n_embd; ++j) z[size_t(v)] += double(row[size_t(j)]) * last[size_t(j)];
    zz += z[size_t(v)] * z[size_t(v)];
    zl += z[size_t(v)] * last_logits[size_t(v)];
    ll += double(last_logits[size_t(v)]) * last_logits[size_t(v)];
  }
  EXPECT_GT(zl / std::sqrt(zz * ll), 0.99999);  // the same direction
  for (Runner::Pooling pooling : {Runner::Pooling::kMean, Runner::Pooling::kLast, Runner::Pooling::kFirst}) {
    const std::vector<float> e = embed(Backend::kCpu, tokens, pooling);
    double n2 = 0;
    for (float x : e) n2 += double(x) * x;
    EXPECT_NEAR(n2, 1.0, 1e-5);
    if (have_vulkan()) {
      EXPECT_LT(max_abs_diff(embed(Backend::kVulkan, tokens, pooling), e), 2e-3);
    }
  }
  const std::vector<int32_t> one(tokens.begin(), tokens.begin() + 1);
  EXPECT_LT(max_abs_diff(embed(Backend::kCpu, tokens, Runner::Pooling::kFirst), embed(Backend::kCpu, one, Runner::Pooling::kLast)), 1e-5);
  EXPECT_LT(max_abs_diff(embed(Backend::kCpu, one, Runner::Pooling::kMean), embed(Backend::kCpu, one, Runner::Pooling::kLast)), 1e-6);
}

TEST(Runner, LongInputsRunInSeveralStepsWithTheSameResult) {
  ZINC_REQUIRE_TEST_DATA();
  auto m = load("models/qwen35-f32.gguf");
  ASSERT_TRUE(m);
  const auto t = some_tokens(40, 3);
  const auto ref = alone(*m, t);
  RunnerOptions o;
  o.n_threads = 2;
  o.n_ctx = 64;
  o.max_batch = 16;
  auto r = Runner::create(*m, o);
  const kv::SeqId s = (*r)->cache().add_sequence().value();
  auto rows = (*r)->decode(s, t, true);
  ASSERT_TRUE(rows.ok()) << rows.status().message();
  ASSERT_EQ(rows->size(), ref.size());
  EXPECT_LT(max_abs_diff(*rows, ref), 1e-4);
}

TEST(Runner, KeepsABoundedNumberOfGraphs) {
  ZINC_REQUIRE_TEST_DATA();
  auto m = load("models/stories260K.gguf");
  ASSERT_TRUE(m);
  RunnerOptions o;
  o.n_threads = 1;
  o.n_ctx = 64;
  auto r = Runner::create(*m, o);
  const kv::SeqId s = (*r)->cache().add_sequence().value();
  const auto t = some_tokens(20, 5);
  std::vector<float> last;
  for (size_t n = 20; n >= 5; --n) {  // 16 prompt lengths, 16 shapes
    (*r)->cache().clear(s);
    auto rows = (*r)->decode(s, std::span<const int32_t>(t).first(n), false);
    ASSERT_TRUE(rows.ok());
    EXPECT_LE((*r)->n_executors(), Runner::kMaxExecutors);
    if (n == 20) last.assign(rows->begin(), rows->end());
  }
  (*r)->cache().clear(s);
  auto again = (*r)->decode(s, t, false);  // a rebuilt graph gives the same result
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(std::vector<float>(again->begin(), again->end()), last);
}

TEST(Runner, RejectsBadInputWithAStatus) {
  ZINC_REQUIRE_TEST_DATA();
  auto m = load("models/stories260K.gguf");
  ASSERT_TRUE(m);
  RunnerOptions o;
  o.n_threads = 1;
  o.n_ctx = 32;
  auto r = Runner::create(*m, o);
  ASSERT_TRUE(r.ok());
  const kv::SeqId s = (*r)->cache().add_sequence().value();
  const std::vector<int32_t> bad{1, 512};
  auto e1 = (*r)->decode(s, bad, false);
  ASSERT_FALSE(e1.ok());
  EXPECT_NE(e1.status().message().find("token 512 at index 1 is outside the vocabulary of 512"), std::string::npos)
      << e1.status().message();
  auto e2 = (*r)->decode(3, std::vector<int32_t>{1}, false);
  ASSERT_FALSE(e2.ok());
  // Positions must continue the sequence.
  std::vector<int32_t> tok{1}, pos{5}, seq{s}, rows{0};
  auto e3 = (*r)->decode(graph::Batch{tok, pos, seq, rows});
  ASSERT_FALSE(e3.ok());
  EXPECT_NE(e3.status().message().find("position 5, expected 0"), std::string::npos) << e3.status().message();
  // The pool holds 32 tokens: a 40-token prompt is a Status, not a crash.
  auto e4 = (*r)->decode(s, some_tokens(40, 1), false);
  ASSERT_FALSE(e4.ok());
  EXPECT_NE(e4.status().message().find("KV cache full"), std::string::npos) << e4.status().message();
}

TEST(Generate, GreedyStopsAtStopTokensAndLimits) {
  ZINC_REQUIRE_TEST_DATA();
  auto m = load("models/stories260K.gguf");
  ASSERT_TRUE(m);
  RunnerOptions o;
  o.n_threads = 2;
  o.n_ctx = 128;
  auto r = Runner::create(*m, o);
  const kv::SeqId s = (*r)->cache().add_sequence().value();
  SamplerParams sp;
  sp.temperature = 0;
  Sampler greedy(sp, 512);
  const std::vector<int32_t> prompt{1, 403, 407, 261, 378};
  GenerateOptions go;
  go.max_new_tokens = 20;
  std::vector<int32_t> streamed;
  auto res = generate(**r, s, prompt, greedy, go, [&](int32_t t) {
    streamed.push_back(t);
    return true;
  });
  ASSERT_TRUE(res.ok()) << res.status().message();
  ASSERT_EQ(res->tokens.size(), 20u);
  EXPECT_EQ(streamed, res->tokens);
  EXPECT_EQ(res->reason, StopReason::kMaxTokens);
  EXPECT_EQ((*r)->cache().length(s), 25);

  // Again, stopping at the 5th generated token.
  (*r)->cache().clear(s);
  Sampler greedy2(sp, 512);
  go.stop_tokens = {res->tokens[4]};
  auto res2 = generate(**r, s, prompt, greedy2, go);
  ASSERT_TRUE(res2.ok());
  EXPECT_EQ(res2->reason, StopReason::kEndOfGeneration);
  EXPECT_EQ(res2->tokens, std::vector<int32_t>(res->tokens.begin(), res->tokens.begin() + 4));
}

}  // namespace
}  // namespace zinc::engine
