// ssm_conv1d + gated_delta_net (state carried across steps, two sequences interleaved, tiled and
// grouped head maps), gated_rms_norm and shared_expert_gate against the CPU ops on random data;
// the device state must end equal to the CPU cache's, slot for slot.
#include <cstring>

#include "cpu_ref.h"
#include "vk_test_util.h"
#include "vulkan/ops/gated_delta_net.h"
#include "vulkan/ops/gated_rms_norm.h"
#include "vulkan/ops/shared_expert_gate.h"
#include "vulkan/ops/ssm_conv1d.h"

namespace zinc::vulkan::test {
namespace {

struct HybridShape {
  int32_t taps, n_k, d_k, n_v, d_v;
  bool grouped;
};

// The sequence (0, 1 or 2) of each token of each step: 5 tokens, 7 (two sequences alternating),
// 1, 40 (runs of both sequences, longer than a chunk), 3 (a new sequence with fewer tokens than
// the conv window, interleaved), 75 (three sequences: odd runs longer than two chunks, single
// tokens between them, a run that returns after others).
std::vector<std::vector<int>> hybrid_steps() {
  std::vector<std::vector<int>> steps;
  steps.push_back({0, 0, 0, 0, 0});
  steps.push_back({0, 1, 0, 1, 0, 1, 0});
  steps.push_back({0});
  std::vector<int> step;
  for (int i = 0; i < 40; ++i) step.push_back(i >= 21 && i % 7 != 0 ? 1 : 0);
  steps.push_back(step);
  steps.push_back({2, 0, 2});
  step.clear();
  for (int i = 0; i < 37; ++i) step.push_back(1);
  for (int i = 0; i < 5; ++i) step.push_back(2);
  step.insert(step.end(), {0, 2, 1, 0});
  for (int i = 0; i < 17; ++i) step.push_back(0);
  for (int i = 0; i < 11; ++i) step.push_back(i % 3 == 1 ? 2 : 1);
  step.push_back(2);
  steps.push_back(step);
  return steps;
}

void check_hybrid(const HybridShape& s, ops::DeltaNetKernel which, ops::ConvKernel conv_kernel,
                  uint32_t chunked_rows = 16) {
  SCOPED_TRACE(testing::Message() << (which == ops::DeltaNetKernel::kChunked ? "chunked " : "tokens ")
                                  << chunked_rows << " rows "
                                  << (conv_kernel == ops::ConvKernel::kBatched ? "conv batched " : "conv tokens ")
                                  << "taps " << s.taps << " heads " << s.n_k << "x" << s.d_k << " / " << s.n_v
                                  << "x" << s.d_v << (s.grouped ? " grouped" : " tiled"));
  const int64_t key_dim = int64_t(s.n_k) * s.d_k, conv_dim = 2 * key_dim + int64_t(s.n_v) * s.d_v;
  const int64_t out_dim = int64_t(s.n_v) * s.d_v;
  graph::StateLayout st;
  st.recurrent_layers = {{(s.taps - 1) * conv_dim, out_dim * s.d_k}};
  constexpr int kSeqs = 3;
  auto cache_r = kv::Cache::create(st, {0, kSeqs, kv::KvType::kF16});
  ASSERT_TRUE(cache_r.ok());
  kv::Cache& cache = **cache_r;
  kv::SeqId seqs[kSeqs];
  for (auto& q : seqs) q = cache.add_sequence().value();
  const float* base = std::min(cache.conv_state(0, 0), cache.ssm_state(0, 0));
  const uint32_t slot_floats = uint32_t(cache.conv_state(0, 1) - cache.conv_state(0, 0));
  const uint32_t conv_off = uint32_t(cache.conv_state(0, 0) - base), ssm_off = uint32_t(cache.ssm_state(0, 0) - base);

  const auto kernel = random_floats(size_t(conv_dim * s.taps), 1, 0.5f);
  auto a = random_floats(size_t(s.n_v), 2), dt = random_floats(size_t(s.n_v), 3);
  for (auto& x : a) x = -std::exp(x);
  const graph::Weight wk = graph_weight(TensorType::F32, kernel.data(), s.taps, conv_dim),
                      wa = graph_weight(TensorType::F32, a.data(), s.n_v),
                      wdt = graph_weight(TensorType::F32, dt.data(), s.n_v);
  auto conv_op = ops::SsmConv1d::create(dev(), conv_kernel);
  auto gdn_op = ops::GatedDeltaNet::create(dev(), true, which, chunked_rows);
  ASSERT_TRUE(conv_op.ok() && gdn_op.ok());
  auto bkernel = host_buffer(kernel), ba = host_buffer(a), bdt = host_buffer(dt);
  auto bstate = host_buffer({}, size_t(slot_floats) * kSeqs);
  const ops::DeltaNetShape shape{uint32_t(s.n_k), uint32_t(s.d_k), uint32_t(s.n_v), uint32_t(s.d_v), s.grouped,
                                 1e-6f};
  cpu::ThreadPool pool(2);
  uint32_t seed = 50;
  int32_t next_pos[kSeqs] = {};
  const auto steps = hybrid_steps();
  for (size_t step = 0; step < steps.size(); ++step) {
    CpuBatch b;
    const int T = int(steps[step].size());
    for (int i : steps[step]) b.add(seqs[i], next_pos[i]++);
    graph::GraphBuilder g({T, T}, st);
    auto qkv = g.input("qkv", conv_dim), beta = g.input("beta", s.n_v), alpha = g.input("alpha", s.n_v);
    auto conv = g.buffer("conv", conv_dim), out = g.buffer("out", out_dim);
    g.add("conv", graph::SsmConv1d{qkv, conv, &wk, 0});
    graph::GatedDeltaNet op;
    op.qkv = conv;
    op.beta = beta;
    op.alpha = alpha;
    op.out = out;
    op.a = &wa;
    op.dt_bias = &wdt;
    op.n_k_heads = s.n_k;
    op.d_k = s.d_k;
    op.n_v_heads = s.n_v;
    op.d_v = s.d_v;
    op.key_map = s.grouped ? graph::KeyHeadMap::kGrouped : graph::KeyHeadMap::kTiled;
    op.recurrent_layer = 0;
    g.add("gdn", op);
    cpu::Executor ex(g.finish(out), pool);
    const auto m = random_floats(size_t(T * conv_dim), seed++), be = random_floats(size_t(T * s.n_v), seed++),
               al = random_floats(size_t(T * s.n_v), seed++);
    fill(ex, qkv, m);
    fill(ex, beta, be);
    fill(ex, alpha, al);
    ex.run(b.view(), cache);
    const auto want = copy_out(ex, out);

    // The device: the same inputs at padded strides.
    const uint32_t cs = uint32_t(conv_dim + 3) / 4 * 4 + 4, os = uint32_t(out_dim) + 4, gs = uint32_t(s.n_v) + 1;
    std::vector<float> mp(size_t(T) * cs), bep(size_t(T) * gs), alp(size_t(T) * gs);
    for (int t = 0; t < T; ++t) {
      std::copy_n(&m[size_t(t * conv_dim)], conv_dim, &mp[size_t(t) * cs]);
      std::copy_n(&be[size_t(t * s.n_v)], s.n_v, &bep[size_t(t) * gs]);
      std::copy_n(&al[size_t(t * s.n_v)], s.n_v, &alp[size_t(t) * gs]);
    }
    auto bm = host_buffer(mp), bbe = host_buffer(bep), bal = host_buffer(alp);
    auto bconv = host_buffer({}, size_t(T) * cs), bout = host_buffer({}, size_t(T) * os);
    auto bseq = host_buffer({}, size_t(T));
    std::memcpy(bseq->mapped(), b.seq_ids.data(), size_t(T) * 4);
    const ops::StateSlots slots{{bstate.get()}, {bseq.get()}, slot_floats};
    run([&](Commands& c) {
      Status r = (*conv_op)->record(c, {{bm.get()}, cs}, {bkernel.get()}, slots, conv_off, {{bconv.get()}, cs},
                                    uint32_t(T), uint32_t(conv_dim), uint32_t(s.taps));
      ASSERT_TRUE(r.ok()) << r.message();
      c.barrier();
      r = (*gdn_op)->record(c, shape, {{bconv.get()}, cs}, {{bbe.get()}, gs}, {{bal.get()}, gs}, {ba.get()},
                            {bdt.get()}, slots, ssm_off, {{bout.get()}, os}, uint32_t(T));
      ASSERT_TRUE(r.ok()) << r.message();
    });
    const auto got_all = read_floats(*bout, size_t(T) * os);
    std::vector<float> got(want.size());
    for (int t = 0; t < T; ++t) std::copy_n(&got_all[size_t(t) * os], out_dim, &got[size_t(t * out_dim)]);
    SCOPED_TRACE(step);
    expect_near_all(got, want, 2e-4f * std::max(1.f, max_abs(want)), "delta-net out");
  }
  const auto state = read_floats(*bstate, size_t(slot_floats) * kSeqs);
  for (kv::SeqId seq : seqs) {
    const float* cpu_conv = cache.conv_state(0, seq);
    const float* cpu_ssm = cache.ssm_state(0, seq);
    const size_t off = size_t(seq) * slot_floats;
    expect_near_all(std::vector<float>(state.begin() + off + conv_off, state.begin() + off + conv_off + (s.taps - 1) * conv_dim),
                    std::vector<float>(cpu_conv, cpu_conv + (s.taps - 1) * conv_dim), 0.f, "conv state");
    expect_near_all(std::vector<float>(state.begin() + off + ssm_off, state.begin() + off + ssm_off + out_dim * s.d_k),
                    std::vector<float>(cpu_ssm, cpu_ssm + out_dim * s.d_k), 2e-4f, "ssm state");
  }
}

TEST(VulkanDeltaNet, TokenKernelMatchesCpuRecurrence) {
  ZINC_REQUIRE_VULKAN();
  for (auto conv : {ops::ConvKernel::kTokens, ops::ConvKernel::kBatched}) {
    check_hybrid({4, 2, 40, 4, 6, false}, ops::DeltaNetKernel::kTokens, conv);
    check_hybrid({4, 2, 40, 4, 6, true}, ops::DeltaNetKernel::kTokens, conv);
    check_hybrid({4, 1, 128, 2, 128, true}, ops::DeltaNetKernel::kTokens, conv);
    check_hybrid({2, 3, 17, 3, 33, false}, ops::DeltaNetKernel::kTokens, conv);
    check_hybrid({4, 1, 200, 2, 24, true}, ops::DeltaNetKernel::kTokens, conv);  // d_k past 128
  }
}

// Taps 1 to 8 (no state to 7 state rows, more than some sequences' tokens in a step).
TEST(VulkanDeltaNet, ChunkedKernelMatchesCpuRecurrence) {
  ZINC_REQUIRE_VULKAN();
  for (auto conv : {ops::ConvKernel::kTokens, ops::ConvKernel::kBatched}) {
    check_hybrid({4, 2, 40, 4, 6, false}, ops::DeltaNetKernel::kChunked, conv);
    check_hybrid({4, 2, 40, 4, 6, true}, ops::DeltaNetKernel::kChunked, conv);
    check_hybrid({4, 1, 128, 2, 128, true}, ops::DeltaNetKernel::kChunked, conv);
    check_hybrid({2, 3, 17, 3, 33, false}, ops::DeltaNetKernel::kChunked, conv);
  }
  for (uint32_t rows : {16u, 8u}) {
    check_hybrid({1, 2, 8, 2, 20, true}, ops::DeltaNetKernel::kChunked, ops::ConvKernel::kBatched, rows);
    check_hybrid({8, 2, 16, 4, 37, false}, ops::DeltaNetKernel::kChunked, ops::ConvKernel::kBatched, rows);
    check_hybrid({5, 4, 128, 8, 24, true}, ops::DeltaNetKernel::kChunked, ops::ConvKernel::kBatched, rows);
  }
  check_hybrid({4, 1, 128, 2, 128, true}, ops::DeltaNetKernel::kChunked, ops::ConvKernel::kAuto, 8);
}

TEST(VulkanGatedRmsNorm, MatchesCpu) {
  ZINC_REQUIRE_VULKAN();
  for (uint32_t group : {6u, 128u, 300u}) {
    const uint32_t T = 5, cols = group * 3;
    const auto x = random_floats(size_t(T) * cols, 1), gt = random_floats(size_t(T) * cols, 2),
               w = random_floats(group, 3);
    const graph::Weight ww = graph_weight(TensorType::F32, w.data(), group);
    graph::GraphBuilder g({T, T}, {});
    auto bi = g.input("in", cols), bg = g.input("gate", cols);
    auto out = g.buffer("out", cols);
    g.add("norm", graph::GatedRmsNorm{bi, bg, out, &ww, int32_t(group), 1e-6f});
    cpu::ThreadPool pool(1);
    cpu::Executor ex(g.finish(out), pool);
    fill(ex, bi, x);
    fill(ex, bg, gt);
    CpuBatch b;
    for (uint32_t t = 0; t < T; ++t) b.add(0, int32_t(t));
    auto cache = kv::Cache::create({}, {0, 1, kv::KvType::kF16});
    ex.run(b.view(), **cache);
    const auto want = copy_out(ex, out);

    auto op = ops::GatedRmsNorm::create(dev());
    ASSERT_TRUE(op.ok());
    auto dx = host_buffer(x), dg = host_buffer(gt), dw = host_buffer(w), dy = host_buffer({}, x.size());
    run([&](Commands& c) {
      ASSERT_TRUE((*op)->record(c, {{dx.get()}, cols}, {{dg.get()}, cols}, {dw.get()}, {{dy.get()}, cols}, T, cols,
                                group, 1e-6f)
                      .ok());
    });
    expect_near_all(read_floats(*dy, x.size()), want, 1e-5f * max_abs(want), "gated rms norm");
  }
}

TEST(VulkanSharedExpertGate, MatchesCpu) {
  ZINC_REQUIRE_VULKAN();
  const uint32_t T = 4, n = 300, m = 2100;  // past the outputs held in registers
  const auto x = random_floats(size_t(T) * n, 1), sh = random_floats(size_t(T) * m, 2),
             o0 = random_floats(size_t(T) * m, 3), gw = random_floats(n, 4, 0.1f);
  const graph::Weight wg = graph_weight(TensorType::F32, gw.data(), n);
  graph::GraphBuilder g({T, T}, {});
  auto bx = g.input("x", n), bs = g.input("shared", m), bo = g.input("out", m);
  g.add("gate", graph::SharedExpertGate{bx, bs, bo, &wg});
  cpu::ThreadPool pool(1);
  cpu::Executor ex(g.finish(bo), pool);
  fill(ex, bx, x);
  fill(ex, bs, sh);
  fill(ex, bo, o0);
  CpuBatch b;
  for (uint32_t t = 0; t < T; ++t) b.add(0, int32_t(t));
  auto cache = kv::Cache::create({}, {0, 1, kv::KvType::kF16});
  ex.run(b.view(), **cache);
  const auto want = copy_out(ex, bo);

  auto op = ops::SharedExpertGate::create(dev());
  ASSERT_TRUE(op.ok());
  auto dx = host_buffer(x), ds = host_buffer(sh), dout = host_buffer(o0), dg = host_buffer(gw);
  run([&](Commands& c) {
    ASSERT_TRUE((*op)->record(c, {{dx.get()}, n}, {dg.get()}, {{ds.get()}, m}, {{dout.get()}, m}, T, n, m).ok());
  });
  expect_near_all(read_floats(*dout, want.size()), want, 1e-5f * max_abs(want), "shared expert gate");
}

}  // namespace
}  // namespace zinc::vulkan::test
