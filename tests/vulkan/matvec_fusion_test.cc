// The delta-net decode fusions of the matvec kernels on random data: the conv epilogue
// (ops::OutputConv) against the plain matvec followed by the CPU's ssm_conv1d (state slots of two
// sequences interleaved, carried over two steps, compared slot for slot), and the gated input norm
// (ops::GatedInputNorm) against the CPU's gated_rms_norm followed by a float64 product; the
// arguments the RoPE / KV store epilogue (ops::OutputRopeKv) refuses, and its per-head form
// (QK norm, NEOX pairs, heads at a stride) for workgroups of fewer rows than a head, rows
// straddling heads and several heads (the pool stores are checked through the executor:
// executor_test.cc RopeKvEpiloguesMatchCpu).
#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <tuple>

#include "cpu_ref.h"
#include "vk_test_util.h"
#include "vulkan/ops/matvec.h"

namespace zinc::vulkan::test {
namespace {

using ops::Activations;
using ops::Matvec;
using ops::MatvecOptions;

const Matvec* matvec_for(TensorType type, const MatvecOptions& o) {
  static std::map<std::tuple<int, bool, bool, bool>, std::unique_ptr<Matvec>> cache;
  auto& slot = cache[{int(type), o.int8, o.subgroup, o.staged}];
  if (!slot) {
    auto mv = Matvec::create(dev(), type, o);
    EXPECT_TRUE(mv.ok()) << mv.status().message();
    if (mv.ok()) slot = std::move(*mv);
  }
  return slot.get();
}

MatvecOptions options(bool int8, bool subgroup, bool staged) {
  MatvecOptions o;
  o.int8 = int8;
  o.subgroup = subgroup;
  o.staged = staged;
  return o;
}

// Two steps (5 tokens of sequences 1 and 2 interleaved, then 1 token of sequence 2) of
// y = conv(W x) with `channels` = rows; the state of slots 1 and 2 starts random.
void check_conv(TensorType type, const MatvecOptions& opt, int64_t channels, int64_t cols, int32_t taps,
                uint64_t max_chunk_bytes = 0, bool norm = false) {
  const Matvec* mv = matvec_for(type, opt);
  ASSERT_NE(mv, nullptr);
  SCOPED_TRACE(testing::Message() << type_name(type) << " " << channels << "x" << cols << " taps " << taps
                                  << (mv->uses_int8() ? " int8" : " float") << (mv->uses_staged(cols) ? " staged" : "")
                                  << (max_chunk_bytes ? " chunked" : "") << (norm ? " +norm" : ""));
  const Matrix m = random_matrix(type, channels, cols, 7 + uint32_t(channels));
  auto bnorm = host_buffer(random_floats(size_t(cols), 9));
  const ops::InputNorm in_norm{{bnorm.get()}, 1e-5f};
  const ops::InputNorm* np = norm ? &in_norm : nullptr;
  auto w = upload(m, max_chunk_bytes);
  ASSERT_TRUE(w);
  if (max_chunk_bytes) {
    EXPECT_GT(w->chunks().size(), 1u);
  }
  graph::StateLayout st;
  st.recurrent_layers = {{(taps - 1) * channels, 8}};
  auto cache_r = kv::Cache::create(st, {0, 3, kv::KvType::kF16});
  ASSERT_TRUE(cache_r.ok());
  kv::Cache& cache = **cache_r;
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(cache.add_sequence().ok());
  const uint32_t slot_floats = uint32_t(cache.recurrent_state(0).size());
  const uint32_t conv_off = uint32_t(cache.conv_state(0, 0) - cache.recurrent_state(0).data());
  for (kv::SeqId s : {1, 2}) {
    const auto init = random_floats(size_t((taps - 1) * channels), 40 + uint32_t(s));
    std::copy(init.begin(), init.end(), cache.conv_state(0, s));
  }
  std::vector<float> all_state;
  for (kv::SeqId s = 0; s < 3; ++s)
    all_state.insert(all_state.end(), cache.recurrent_state(s).begin(), cache.recurrent_state(s).end());
  auto bstate = host_buffer(all_state);

  const auto kernel = random_floats(size_t(channels * taps), 3, 0.5f);
  const graph::Weight wk = graph_weight(TensorType::F32, kernel.data(), taps, channels);
  auto bkernel = host_buffer(kernel);
  cpu::ThreadPool pool(1);
  for (int step = 0; step < 2; ++step) {
    SCOPED_TRACE(step);
    CpuBatch b;
    const std::vector<int32_t> seqs = step == 0 ? std::vector<int32_t>{1, 2, 1, 1, 2} : std::vector<int32_t>{2};
    for (size_t i = 0; i < seqs.size(); ++i) b.add(seqs[i], int32_t(step * 8 + i));
    const uint32_t T = uint32_t(seqs.size());
    const uint32_t x_stride = uint32_t((cols + 3) / 4 * 4) + 4, y_stride = uint32_t(channels) + 5;
    auto bx = host_buffer(random_floats(size_t(T) * x_stride, 60 + uint32_t(step)));
    auto bplain = host_buffer({}, size_t(T) * y_stride), bfused = host_buffer({}, size_t(T) * y_stride);
    auto bseq = host_buffer({}, T);
    std::memcpy(bseq->mapped(), b.seq_ids.data(), size_t(T) * 4);
    const ops::OutputConv conv{{bkernel.get()}, {{bstate.get()}, {bseq.get()}, slot_floats}, conv_off, uint32_t(taps)};
    const Activations ax{{bx.get()}, x_stride};
    run([&](Commands& c) {
      Status s = mv->record(c, *w, ax, {{bplain.get()}, y_stride}, T, nullptr, np);
      ASSERT_TRUE(s.ok()) << s.message();
      s = mv->record_fused(c, *w, ax, {{bfused.get()}, y_stride}, T, {nullptr, np, nullptr, &conv});
      ASSERT_TRUE(s.ok()) << s.message();
    });
    // The CPU conv over the device's plain product.
    const auto plain = read_floats(*bplain, size_t(T) * y_stride);
    std::vector<float> qkv(size_t(T * channels));
    for (uint32_t t = 0; t < T; ++t) std::copy_n(&plain[t * y_stride], channels, &qkv[size_t(t * channels)]);
    graph::GraphBuilder g({T, T}, st);
    auto in = g.input("qkv", channels), out = g.buffer("conv", channels);
    g.add("conv", graph::SsmConv1d{in, out, &wk, 0});
    cpu::Executor ex(g.finish(out), pool);
    fill(ex, in, qkv);
    ex.run(b.view(), cache);
    const auto want = copy_out(ex, out);
    const auto fused = read_floats(*bfused, size_t(T) * y_stride);
    std::vector<float> got(want.size());
    for (uint32_t t = 0; t < T; ++t) std::copy_n(&fused[t * y_stride], channels, &got[size_t(t * channels)]);
    expect_near_all(got, want, 1e-5f * std::max(1.f, max_abs(want)), "conv out");
  }
  const auto state = read_floats(*bstate, all_state.size());
  for (kv::SeqId s = 0; s < 3; ++s) {
    const float* cpu = cache.conv_state(0, s);
    const size_t off = size_t(s) * slot_floats + conv_off;
    expect_near_all(std::vector<float>(state.begin() + off, state.begin() + off + (taps - 1) * channels),
                    std::vector<float>(cpu, cpu + (taps - 1) * channels), 0.f, "conv state");
  }
}

TEST(VulkanMatvecConv, MatchesMatvecThenCpuConv) {
  ZINC_REQUIRE_VULKAN();
  check_conv(TensorType::F32, options(false, true, true), 67, 100, 4);     // float path, partial group
  check_conv(TensorType::F32, options(false, true, true), 67, 100, 4, 0, true);
  check_conv(TensorType::Q4_K, options(true, true, true), 67, 256, 4);     // staged where the device has it
  check_conv(TensorType::Q4_K, options(true, true, true), 67, 256, 4, 0, true);
  check_conv(TensorType::Q8_0, options(true, true, false), 45, 96, 3);     // per-thread int8 kernel
  check_conv(TensorType::Q4_0, options(true, false, true), 33, 64, 2);     // shared-memory reductions
  check_conv(TensorType::Q6_K, options(true, true, true), 300, 512, 4, 64 * 1024);  // row chunks
  check_conv(TensorType::F16, options(false, true, true), 19, 64, 1);      // no state
}

// y = W gated_rms_norm(x, gate) for n_tokens tokens, against the CPU norm and a float64 product
// (tolerance as in matvec_test.cc: int8 rounding of x per 32-group).
void check_gated(TensorType type, int64_t rows, int64_t cols, uint32_t group, uint32_t n_tokens,
                 uint64_t max_chunk_bytes = 0, bool residual = false) {
  const Matvec* mv = matvec_for(type, options(true, true, true));
  ASSERT_NE(mv, nullptr);
  if (!mv->supports_gated_norm(cols, group)) GTEST_SKIP() << "no staged int8 matvec on this device";
  EXPECT_FALSE(mv->supports_gated_norm(cols, 48));
  SCOPED_TRACE(testing::Message() << type_name(type) << " " << rows << "x" << cols << " group " << group << " tokens "
                                  << n_tokens << (residual ? " +residual" : "") << (max_chunk_bytes ? " chunked" : ""));
  const Matrix m = random_matrix(type, rows, cols, 17 + uint32_t(rows));
  auto w = upload(m, max_chunk_bytes);
  ASSERT_TRUE(w);
  const uint32_t x_stride = uint32_t(cols) + 4, g_stride = uint32_t(cols) + 8, y_stride = uint32_t(rows) + 3;
  const auto x = random_floats(size_t(n_tokens) * x_stride, 5), gate = random_floats(size_t(n_tokens) * g_stride, 6),
             nw = random_floats(group, 7), res = random_floats(size_t(n_tokens) * y_stride, 8);
  const float eps = 1e-6f;

  std::vector<float> xc(size_t(n_tokens * cols)), gc(xc.size());
  for (uint32_t t = 0; t < n_tokens; ++t) {
    std::copy_n(&x[t * x_stride], cols, &xc[size_t(t * cols)]);
    std::copy_n(&gate[t * g_stride], cols, &gc[size_t(t * cols)]);
  }
  const graph::Weight wn = graph_weight(TensorType::F32, nw.data(), group);
  graph::GraphBuilder g({n_tokens, n_tokens}, {});
  auto bi = g.input("in", cols), bg = g.input("gate", cols), bo = g.buffer("out", cols);
  g.add("norm", graph::GatedRmsNorm{bi, bg, bo, &wn, int32_t(group), eps});
  cpu::ThreadPool pool(1);
  cpu::Executor ex(g.finish(bo), pool);
  fill(ex, bi, xc);
  fill(ex, bg, gc);
  CpuBatch b;
  for (uint32_t t = 0; t < n_tokens; ++t) b.add(0, int32_t(t));
  auto cache = kv::Cache::create({}, {0, 1, kv::KvType::kF16});
  ex.run(b.view(), **cache);
  const auto xn = copy_out(ex, bo);

  auto bx = host_buffer(x), bgate = host_buffer(gate), bw = host_buffer(nw);
  auto by = host_buffer(residual ? res : std::vector<float>(), size_t(n_tokens) * y_stride);
  const Activations ay{{by.get()}, y_stride};
  const ops::GatedInputNorm gn{{{bgate.get()}, g_stride}, {bw.get()}, group, eps};
  run([&](Commands& c) {
    const Status s =
        mv->record_fused(c, *w, {{bx.get()}, x_stride}, ay, n_tokens, {residual ? &ay : nullptr, nullptr, &gn, nullptr});
    ASSERT_TRUE(s.ok()) << s.message();
  });
  const auto y = read_floats(*by, size_t(n_tokens) * y_stride);
  int bad = 0;
  for (uint32_t t = 0; t < n_tokens; ++t)
    for (int64_t r = 0; r < rows; ++r) {
      double acc = 0, mag = 0, qerr = 0;
      for (int64_t g0 = 0; g0 < cols; g0 += 32) {
        double amax = 0, wsum = 0;
        for (int64_t k = g0; k < g0 + 32; ++k) {
          const double wv = m.values[size_t(r * cols + k)], xv = xn[size_t(t * cols + k)];
          acc += wv * xv;
          mag += std::fabs(wv * xv);
          amax = std::max(amax, std::fabs(xv));
          wsum += std::fabs(wv);
        }
        qerr += amax / 254.0 * wsum;
      }
      const double want = acc + (residual ? res[t * y_stride + size_t(r)] : 0.0);
      const double tol = 1e-5 * mag + 1e-5 + 1.1 * qerr + 2e-6 * std::fabs(acc);
      const float got = y[t * y_stride + size_t(r)];
      if (!(std::fabs(got - want) <= tol) && ++bad <= 5)
        ADD_FAILURE() << "token " << t << " row " << r << ": got " << got << " want " << want << " tol " << tol;
    }
  EXPECT_EQ(bad, 0);
}

TEST(VulkanMatvecGatedNorm, MatchesCpuGatedRmsNorm) {
  ZINC_REQUIRE_VULKAN();
  check_gated(TensorType::Q4_K, 77, 512, 128, 1);
  check_gated(TensorType::Q4_K, 77, 512, 128, 3, 0, true);
  check_gated(TensorType::Q8_0, 65, 96, 32, 8);
  check_gated(TensorType::Q6_K, 130, 768, 256, 2, 64 * 1024);
  check_gated(TensorType::Q5_K, 9, 8192, 32, 2);  // more norm groups than threads per workgroup
}

// What the epilogue cannot do is an error at record time, never a wrong result.
TEST(VulkanMatvecRopeKv, RefusesArgumentsItCannotServe) {
  ZINC_REQUIRE_VULKAN();
  const Matvec* mv = matvec_for(TensorType::Q4_K, options(true, true, true));
  ASSERT_NE(mv, nullptr);
  if (!mv->uses_staged(256)) GTEST_SKIP() << "no staged int8 kernel here";
  auto w = upload(random_matrix(TensorType::Q4_K, 128, 256, 3));
  ASSERT_TRUE(w);
  auto bx = host_buffer(random_floats(256, 4)), by = host_buffer({}, 128), bstep = host_buffer({}, 128);
  const ops::StepData step{bstep.get(), 0, 1, 2, 1};
  const Activations ax{{bx.get()}, 256}, ay{{by.get()}, 128};
  auto refused = [&](ops::OutputRopeKv e, const Activations* residual, const char* what) {
    run([&](Commands& c) {
      const Status s = mv->record_fused(c, *w, ax, ay, 1, {residual, nullptr, nullptr, nullptr, &e});
      EXPECT_FALSE(s.ok()) << what;
    });
  };
  ops::OutputRopeKv ok;
  ok.step = &step;
  ok.head_dim = 64;
  ok.n_pairs = 32;
  ok.table_offset = 3;
  run([&](Commands& c) {
    const Status s = mv->record_fused(c, *w, ax, ay, 1, {nullptr, nullptr, nullptr, nullptr, &ok});
    EXPECT_TRUE(s.ok()) << s.message();
  });
  ops::OutputRopeKv e = ok;
  e.head_dim = 0;
  refused(e, nullptr, "head dim 0");
  e.head_dim = 48;  // 128 rows are not whole heads
  refused(e, nullptr, "rows not whole heads");
  e = ok;
  e.n_pairs = 33;
  refused(e, nullptr, "more pairs than the head has");
  e = ok;
  e.step = nullptr;
  refused(e, nullptr, "no step data");
  e = ok;
  e.adjacent = false;
  refused(e, nullptr, "NEOX pairs without the per-head epilogue");
  refused(ok, &ay, "with a residual");
  auto bcounters = host_buffer({}, 64);
  ops::OutputRopeKv head = ok;
  head.per_head = true;
  head.counters = {bcounters.get()};
  run([&](Commands& c) {
    const Status s = mv->record_fused(c, *w, ax, ay, 1, {nullptr, nullptr, nullptr, nullptr, &head});
    EXPECT_TRUE(s.ok()) << s.message();
  });
  e = head;
  e.counters = {};
  refused(e, nullptr, "the per-head epilogue without counters");
  e = head;
  e.head_stride = 96;  // 128 rows are not whole strides
  refused(e, nullptr, "rows not whole head strides");
  e.head_stride = 32;
  refused(e, nullptr, "a stride shorter than the head");
  e = head;
  Buffer* pool = bcounters.get();
  e.pool = pool;
  e.head_stride = 128;
  refused(e, nullptr, "storing heads at a stride");
  auto wide = upload(random_matrix(TensorType::Q4_K, 512, 256, 5));
  ASSERT_TRUE(wide);
  auto bwide = host_buffer({}, 512);
  e = head;
  e.head_dim = 512;
  e.n_pairs = 0;
  run([&](Commands& c) {
    EXPECT_FALSE(mv->record_fused(c, *wide, ax, {{bwide.get()}, 512}, 1, {nullptr, nullptr, nullptr, nullptr, &e}).ok())
        << "a head past kMaxHeadDim";
  });
}

// Two tokens of y = W x whose heads (head_dim 32 every 64 rows, the rows between passed through)
// are normalised (per-head RMS x weight), rotated in NEOX pairs over their first 16 dims and
// written; `rows` per workgroup. Run twice: the head counters are left at zero.
void check_head_epilogue(uint32_t rows_per_group) {
  SCOPED_TRACE(testing::Message() << rows_per_group << " rows a workgroup");
  constexpr uint32_t kDim = 32, kStride = 64, kHeads = 6, kPairs = 8, kTokens = 2;
  constexpr int64_t kRows = kHeads * kStride, kCols = 256;
  MatvecOptions o = options(true, true, true);
  o.rows = rows_per_group;
  auto mv = Matvec::create(dev(), TensorType::Q4_K, o);
  ASSERT_TRUE(mv.ok()) << mv.status().message();
  if (!(*mv)->uses_staged(kCols)) GTEST_SKIP() << "no staged int8 kernel here";
  const Matrix m = random_matrix(TensorType::Q4_K, kRows, kCols, 41);
  auto w = upload(m);
  ASSERT_TRUE(w);
  const std::vector<float> x = random_floats(kTokens * kCols, 42), hw = random_floats(kDim, 43);
  std::vector<float> table(kTokens * kPairs * 2);  // (cos, sin) of pair i at token t
  for (uint32_t i = 0; i < kTokens * kPairs; ++i) {
    table[2 * i] = std::cos(0.37f * float(i + 1));
    table[2 * i + 1] = std::sin(0.37f * float(i + 1));
  }
  auto bx = host_buffer(x), by = host_buffer({}, kTokens * kRows), bhw = host_buffer(hw), btable = host_buffer(table);
  auto bcounters = host_buffer({}, kTokens * kHeads);
  const ops::StepData step{btable.get(), 0, 0, 0, 0};
  const BufferRange norm_w{bhw.get()};
  ops::OutputRopeKv e;
  e.step = &step;
  e.head_dim = kDim;
  e.n_pairs = kPairs;
  e.per_head = true;
  e.adjacent = false;
  e.norm_weight = &norm_w;
  e.norm_eps = 1e-6f;
  e.head_stride = kStride;
  e.counters = {bcounters.get()};
  const Activations ax{{bx.get()}, uint32_t(kCols)}, ay{{by.get()}, uint32_t(kRows)};

  std::vector<double> want(kTokens * kRows);
  for (uint32_t t = 0; t < kTokens; ++t) {
    double* yt = want.data() + t * kRows;
    for (int64_t r = 0; r < kRows; ++r) {
      double acc = 0;
      for (int64_t c = 0; c < kCols; ++c) acc += double(m.values[size_t(r * kCols + c)]) * x[t * kCols + size_t(c)];
      yt[r] = acc;
    }
    for (uint32_t h = 0; h < kHeads; ++h) {
      double* v = yt + h * kStride;
      double ss = 0;
      for (uint32_t d = 0; d < kDim; ++d) ss += v[d] * v[d];
      const double inv = 1.0 / std::sqrt(ss / kDim + 1e-6);
      double n[kDim];
      for (uint32_t d = 0; d < kDim; ++d) n[d] = v[d] * inv * hw[d];
      for (uint32_t d = 0; d < kDim; ++d) v[d] = n[d];
      for (uint32_t i = 0; i < kPairs; ++i) {
        const double c = table[2 * (t * kPairs + i)], sn = table[2 * (t * kPairs + i) + 1];
        v[i] = n[i] * c - n[i + kPairs] * sn;
        v[i + kPairs] = n[i] * sn + n[i + kPairs] * c;
      }
    }
  }
  for (int round = 0; round < 2; ++round) {
    run([&](Commands& c) {
      const Status st = (*mv)->record_fused(c, *w, ax, ay, kTokens, {nullptr, nullptr, nullptr, nullptr, &e});
      EXPECT_TRUE(st.ok()) << st.message();
    });
    const std::vector<float> got = read_floats(*by, kTokens * kRows);
    int bad = 0;
    for (size_t i = 0; i < got.size(); ++i) {
      const bool in_head = (i % kRows) % kStride < kDim;
      const double tol = in_head ? 0.05 : 0.02 * std::sqrt(double(kCols)) + 0.02 * std::fabs(want[i]);
      if (!(std::fabs(got[i] - want[i]) <= tol) && ++bad <= 5)
        ADD_FAILURE() << "round " << round << " token " << i / kRows << " row " << i % kRows << ": got " << got[i]
                      << " want " << want[i];
    }
    EXPECT_EQ(bad, 0);
    EXPECT_EQ(read_floats(*bcounters, kTokens * kHeads), std::vector<float>(kTokens * kHeads, 0.f))
        << "the head counters are left at zero";
  }
}

TEST(VulkanMatvecRopeKv, HeadEpilogueMatchesCpu) {
  ZINC_REQUIRE_VULKAN();
  check_head_epilogue(8);    // a head over four workgroups
  check_head_epilogue(48);   // heads straddling workgroups
  check_head_epilogue(128);  // two heads a workgroup
}

// The next norm's inputs (ops::NormOut) beside a residual-adding staged matvec: the rows times
// the weight, and per workgroup the sum of squares of its rows (summed here per token: they add
// up to the whole row's), against the kernel's own y; shapes of several passes and a partial
// last workgroup.
void check_norm_out(TensorType type, int64_t rows, int64_t cols, uint32_t n_tokens) {
  MatvecOptions o = options(true, true, true);
  o.norm_out = true;
  auto made = Matvec::create(dev(), type, o);
  ASSERT_TRUE(made.ok()) << made.status().message();
  const Matvec* mv = made->get();
  SCOPED_TRACE(testing::Message() << type_name(type) << " " << rows << "x" << cols << " tokens " << n_tokens);
  const Matrix m = random_matrix(type, rows, cols, 41);
  auto w = upload(m);
  ASSERT_TRUE(w);
  const uint32_t n_partials = mv->norm_partials(*w);
  if (n_partials == 0) GTEST_SKIP() << "no staged kernel here";
  const uint32_t R = uint32_t(rows), C = uint32_t(cols);
  const auto x = random_floats(size_t(n_tokens) * C, 42), res = random_floats(size_t(n_tokens) * R, 43, 2.0f);
  const auto nw = random_floats(R, 44);
  auto bx = host_buffer(x), by = host_buffer(res), bw = host_buffer(nw);
  auto bweighted = host_buffer({}, size_t(n_tokens) * R), bpart = host_buffer({}, size_t(n_tokens) * n_partials);
  const Activations y{{by.get()}, R}, weighted{{bweighted.get()}, R};
  const ops::NormOut norm_out{{bw.get()}, weighted, {bpart.get()}};
  run([&](Commands& c) {
    ops::MatvecFusion f;
    f.residual = &y;
    f.norm_out = &norm_out;
    const Status st = mv->record_fused(c, *w, {{bx.get()}, C}, y, n_tokens, f);
    ASSERT_TRUE(st.ok()) << st.message();
  });
  const auto got = read_floats(*by, size_t(n_tokens) * R), got_w = read_floats(*bweighted, size_t(n_tokens) * R);
  const auto parts = read_floats(*bpart, size_t(n_tokens) * n_partials);
  for (uint32_t t = 0; t < n_tokens; ++t) {
    double ss = 0, sum = 0;
    for (uint32_t r = 0; r < R; ++r) {
      const float v = got[t * R + r];
      ss += double(v) * v;
      ASSERT_EQ(got_w[t * R + r], v * nw[r]) << "token " << t << " row " << r;
    }
    for (uint32_t i = 0; i < n_partials; ++i) sum += parts[t * n_partials + i];
    EXPECT_NEAR(sum, ss, 1e-5 * ss) << "token " << t;
  }
  // Not offered by the plain kernel (nor refused silently), nor by a SwiGLU pair's.
  const Matvec* plain = matvec_for(type, options(true, true, true));
  EXPECT_EQ(plain->norm_partials(*w), 0u);
  run([&](Commands& c) {
    ops::MatvecFusion f;
    f.residual = &y;
    f.norm_out = &norm_out;
    EXPECT_FALSE(plain->record_fused(c, *w, {{bx.get()}, C}, y, n_tokens, f).ok());
  });
  o.swiglu = true;
  auto pair = Matvec::create(dev(), type, o);
  ASSERT_TRUE(pair.ok());
  EXPECT_EQ((*pair)->norm_partials(*w), 0u);
}

TEST(VulkanMatvecNormOut, PartialSumsAddUpToTheRows) {
  ZINC_REQUIRE_VULKAN();
  check_norm_out(TensorType::Q4_K, 2048, 4096, 1);
  check_norm_out(TensorType::Q8_0, 1000, 512, 3);
  check_norm_out(TensorType::Q6_K, 4096, 1024, 2);
}

// Each token's largest rows ranked by the last workgroup (ops::TopK) of the top-k variant, in
// the narrow shape a folded router uses: the ids are the k largest of the kernel's own rows,
// largest first, and the counters are left at zero for the next dispatch. More rows than 8 a
// lane of a subgroup (the ranking's old bound), and exact ties among the largest (a row's copy
// with the same residual), which go to the lower index; for the last token all k largest lie in
// one subgroup's chunk of rows (the ranking keeps each chunk's first k as candidates).
TEST(VulkanMatvecTopK, RanksEachTokensRows) {
  ZINC_REQUIRE_VULKAN();
  MatvecOptions o = options(true, true, true);
  o.rows = 4;
  o.k_slices = 4;
  o.topk = true;
  auto made = Matvec::create(dev(), TensorType::Q8_0, o);
  if (!made.ok()) GTEST_SKIP() << made.status().message();
  const Matvec* mv = made->get();
  const uint32_t R = 300, C = 256, T = 3, K = 6;
  Matrix m = random_matrix(TensorType::Q8_0, R, C, 51);
  const size_t rb = row_bytes(TensorType::Q8_0, C);
  std::vector<float> y0 = random_floats(size_t(T) * R, 53);
  for (const auto& [from, to] : {std::pair{7, 250}, std::pair{7, 131}, std::pair{40, 41}}) {
    std::copy_n(m.bytes.begin() + from * rb, rb, m.bytes.begin() + to * rb);
    for (uint32_t t = 0; t < T; ++t) y0[t * R + from] = y0[t * R + to] = from == 7 ? 1000.f + float(t) : 500.f;
  }
  for (uint32_t j = 0; j < K; ++j) y0[(T - 1) * R + 96 + j] = 2000.f + float(j);
  auto w = upload(m);
  ASSERT_TRUE(w);
  auto bx = host_buffer(random_floats(size_t(T) * C, 52)), by = host_buffer(y0);
  auto bids = host_buffer(std::vector<float>(T * K, -1.f)), bcount = host_buffer(std::vector<float>(T + 2, 0.f));
  const Activations y{{by.get()}, R};
  const ops::TopK topk{{bids.get()}, K, {bcount.get()}, 2};
  for (int rep = 0; rep < 2; ++rep) {  // the second run finds the counters as the first left them
    run([&](Commands& c) {
      ops::MatvecFusion f;
      f.residual = &y;  // as a folded router adds R s
      f.topk = &topk;
      const Status st = mv->record_fused(c, *w, {{bx.get()}, C}, y, T, f);
      ASSERT_TRUE(st.ok()) << st.message();
    });
    const auto got = read_floats(*by, size_t(T) * R);
    std::vector<int32_t> ids(T * K);
    std::memcpy(ids.data(), bids->mapped(), ids.size() * 4);
    for (uint32_t t = 0; t < T; ++t) {
      std::vector<int32_t> order(R);
      for (uint32_t r = 0; r < R; ++r) order[r] = int32_t(r);
      std::stable_sort(order.begin(), order.end(), [&](int32_t a, int32_t b) { return got[t * R + a] > got[t * R + b]; });
      for (uint32_t j = 0; j < K; ++j) EXPECT_EQ(ids[t * K + j], order[j]) << "run " << rep << " token " << t << " rank " << j;
      EXPECT_EQ(got[t * R + 7], got[t * R + 250]);  // the ties are exact
      if (t + 1 < T) {
        EXPECT_EQ(std::vector<int32_t>(ids.begin() + t * K, ids.begin() + t * K + 3), (std::vector<int32_t>{7, 131, 250}));
      } else {
        for (uint32_t j = 0; j < K; ++j) EXPECT_TRUE(ids[t * K + j] >= 96 && ids[t * K + j] < int32_t(96 + K)) << "rank " << j;
      }
    }
    std::vector<uint32_t> counters(T + 2);
    std::memcpy(counters.data(), bcount->mapped(), counters.size() * 4);
    EXPECT_EQ(counters, std::vector<uint32_t>(T + 2, 0u));
  }
  // The plain kernel refuses it.
  run([&](Commands& c) {
    ops::MatvecFusion f;
    f.topk = &topk;
    EXPECT_FALSE(matvec_for(TensorType::Q8_0, options(true, true, true))->record_fused(c, *w, {{bx.get()}, C}, y, T, f).ok());
  });
}

}  // namespace
}  // namespace zinc::vulkan::test
