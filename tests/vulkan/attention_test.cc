// ops::Attention's prefill kernels against a double-precision reference over a random f16 KV
// pool: the scalar tiled kernel, the cooperative-matrix kernel where the device has the matrices,
// and that kernel with its matrices emulated in scalar code (its tiling, paging, masking and
// softmax on any device). Cases: odd token counts, several sequences in one batch (and in one
// workgroup's block), keys already in the cache, contexts crossing 16-token pages mapped out of
// order, head dims 32..256 (dk != dv too), 1 to 9 query heads per KV head, gated and not. Pool
// slots no sequence has written hold NaN, so reading one shows.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <numeric>
#include <random>
#include <vector>

#include "core/fp16.h"
#include "vk_test_util.h"
#include "vulkan/ops/attention.h"

namespace zinc::vulkan::test {
namespace {

struct Seq {
  uint32_t depth;   // keys already in the cache
  uint32_t n_rows;  // batch rows (consecutive), at positions depth ..
};

struct Case {
  const char* name;
  uint32_t n_q, n_kv, dk, dv;
  bool gate;  // needs dk == dv: the gate sits after each query head, as in Qwen3.5
  std::vector<Seq> seqs;
};

enum class Kernel { kScalar, kCoopmat, kEmulated };

void check_prefill(const Case& c, const ops::Attention& att, Kernel kernel) {
  SCOPED_TRACE(c.name);

  const uint32_t group = c.n_q / c.n_kv, n_seqs = uint32_t(c.seqs.size());
  uint32_t T = 0, max_pages = 0, n_pages = 3;  // 3 pages nobody maps
  for (const Seq& s : c.seqs) {
    T += s.n_rows;
    const uint32_t pages = (s.depth + s.n_rows + 15) / 16;
    max_pages = std::max(max_pages, pages);
    n_pages += pages;
  }
  // Pages handed out in a shuffled order; page_of[s][i] is sequence s's i-th page.
  std::vector<int32_t> order(n_pages);
  std::iota(order.begin(), order.end(), 0);
  std::shuffle(order.begin(), order.end(), std::mt19937(7));
  std::vector<std::vector<int32_t>> page_of(n_seqs);
  size_t next = 0;
  for (uint32_t s = 0; s < n_seqs; ++s)
    for (uint32_t i = 0; i < (c.seqs[s].depth + c.seqs[s].n_rows + 15) / 16; ++i) page_of[s].push_back(order[next++]);

  // Pools of f16 rows [page * 16 + slot][n_kv * dim]: NaN except the sequences' keys.
  const uint32_t kr = c.n_kv * c.dk, vr = c.n_kv * c.dv;
  std::vector<uint16_t> kpool(size_t(n_pages) * 16 * kr, 0x7e00), vpool(size_t(n_pages) * 16 * vr, 0x7e00);
  std::mt19937 rng(11);
  std::normal_distribution<float> nd(0.f, 1.f);
  for (uint32_t s = 0; s < n_seqs; ++s)
    for (uint32_t key = 0; key < c.seqs[s].depth + c.seqs[s].n_rows; ++key) {
      const size_t row = size_t(page_of[s][key / 16]) * 16 + key % 16;
      for (uint32_t i = 0; i < kr; ++i) kpool[row * kr + i] = f32_to_fp16(nd(rng));
      for (uint32_t i = 0; i < vr; ++i) vpool[row * vr + i] = f32_to_fp16(nd(rng));
    }
  auto bytes_buffer = [](const void* data, size_t n_bytes) {
    auto b = host_buffer({}, (n_bytes + 3) / 4);
    std::memcpy(b->mapped(), data, n_bytes);
    return b;
  };
  auto kbuf = bytes_buffer(kpool.data(), kpool.size() * 2), vbuf = bytes_buffer(vpool.data(), vpool.size() * 2);

  // Step data: positions, sequence ids, page tables.
  std::vector<int32_t> step(2 * size_t(T) + size_t(n_seqs) * max_pages, 0);
  std::vector<uint32_t> row_seq(T), row_pos(T);
  for (uint32_t s = 0, t = 0; s < n_seqs; ++s)
    for (uint32_t i = 0; i < c.seqs[s].n_rows; ++i, ++t) {
      row_seq[t] = s;
      row_pos[t] = c.seqs[s].depth + i;
      step[t] = int32_t(row_pos[t]);
      step[T + t] = int32_t(s);
    }
  for (uint32_t s = 0; s < n_seqs; ++s)
    std::copy(page_of[s].begin(), page_of[s].end(), step.begin() + 2 * T + s * max_pages);
  auto sbuf = bytes_buffer(step.data(), step.size() * 4);

  // q rows: query heads (each followed by its gate with `gate`); scores scaled by 1/sqrt(dk).
  const uint32_t q_stride = c.n_q * c.dk * (c.gate ? 2 : 1), out_stride = c.n_q * c.dv;
  const std::vector<float> qv = random_floats(size_t(T) * q_stride, 21, 1.5f);
  auto qbuf = host_buffer(qv), obuf = host_buffer({}, size_t(T) * out_stride);
  const float scale = 1.f / std::sqrt(float(c.dk));
  ops::AttentionArgs a;
  a.q = {{qbuf.get()}, q_stride};
  a.q_heads = query_heads(c.n_q, c.dk, c.gate);
  if (c.gate) {
    a.gate = &a.q;
    a.gate_heads = gate_heads(c.n_q, c.dk, c.dv);
  }
  a.out = {{obuf.get()}, out_stride};
  a.scale = scale;
  const ops::KvLayerBuffers layer{kbuf.get(), vbuf.get(), c.n_kv, c.dk, c.dv, true};
  const ops::StepData sd{sbuf.get(), 0, T, 2 * T, max_pages};
  run([&](Commands& cmd) {
    const Status s = att.record(cmd, a, layer, sd, T, 1, nullptr);
    ASSERT_TRUE(s.ok()) << s.message();
  });
  const std::vector<float> got = read_floats(*obuf, size_t(T) * out_stride);

  double num = 0, den = 0;
  std::vector<double> p, o(c.dv);
  for (uint32_t t = 0; t < T; ++t)
    for (uint32_t h = 0; h < c.n_q; ++h) {
      const uint32_t kvh = h / group, n_keys = row_pos[t] + 1;
      const float* qh = qv.data() + size_t(t) * q_stride + size_t(h) * a.q_heads.head_stride;
      p.assign(n_keys, 0.0);
      double mx = -INFINITY, sum = 0;
      for (uint32_t j = 0; j < n_keys; ++j) {
        const size_t row = size_t(page_of[row_seq[t]][j / 16]) * 16 + j % 16;
        double d = 0;
        for (uint32_t i = 0; i < c.dk; ++i) d += double(qh[i]) * fp16_to_f32(kpool[row * kr + kvh * c.dk + i]);
        p[j] = d * scale;
        mx = std::max(mx, p[j]);
      }
      std::fill(o.begin(), o.end(), 0.0);
      for (uint32_t j = 0; j < n_keys; ++j) {
        const size_t row = size_t(page_of[row_seq[t]][j / 16]) * 16 + j % 16;
        const double w = std::exp(p[j] - mx);
        sum += w;
        for (uint32_t i = 0; i < c.dv; ++i) o[i] += w * fp16_to_f32(vpool[row * vr + kvh * c.dv + i]);
      }
      for (uint32_t i = 0; i < c.dv; ++i) {
        double want = o[i] / sum;
        if (c.gate) want /= 1.0 + std::exp(-double(qh[c.dk + i]));
        const double g = got[size_t(t) * out_stride + size_t(h) * c.dv + i];
        ASSERT_FALSE(std::isnan(g)) << "row " << t << " head " << h << " dim " << i;
        num += (want - g) * (want - g);
        den += want * want;
      }
    }
  const char* names[] = {"scalar", "coopmat", "emulated"};
  std::printf("[attention] %s, %s: nmse %.3g\n", c.name, names[int(kernel)], num / den);
  // f16 queries and probabilities in the matrix kernels (about 1e-7 here); f32 in the scalar one.
  EXPECT_LE(num / den, kernel == Kernel::kScalar ? 1e-10 : 1e-6);
}

const Case kCases[] = {
    {"8/2 heads dim 128, 37 tokens", 8, 2, 128, 128, false, {{0, 37}}},
    {"8/2 heads dim 128, depth 150 (3 key tiles)", 8, 2, 128, 128, false, {{150, 17}}},
    {"8/1 heads dim 128, two sequences in a block", 8, 1, 128, 128, false, {{21, 41}, {0, 36}}},
    {"16/2 heads dim 256 gated, depth 100", 16, 2, 256, 256, true, {{100, 19}}},
    {"4/2 heads dim 256 gated, three sequences", 4, 2, 256, 256, true, {{0, 20}, {5, 13}, {30, 12}}},
    {"18/2 heads dim 64 gated (9 per KV head)", 18, 2, 64, 64, true, {{3, 23}}},
    {"4/4 heads dk 32 dv 48, 64-row blocks", 4, 4, 32, 48, false, {{0, 40}, {17, 30}}},
};

// Every case through one kernel (pipelines built once: the emulation's take seconds on lavapipe).
void check_kernel(Kernel kernel) {
  ops::AttentionOptions opt;
  opt.coopmat = kernel != Kernel::kScalar;
  opt.emulate_coopmat = kernel == Kernel::kEmulated;
  auto att = ops::Attention::create(dev(), true, opt);
  ASSERT_TRUE(att.ok()) << att.status().message();
  ASSERT_EQ((*att)->uses_coopmat(), kernel != Kernel::kScalar);
  for (const Case& c : kCases) check_prefill(c, **att, kernel);
}

TEST(VulkanAttentionPrefill, ScalarKernel) {
  ZINC_REQUIRE_VULKAN();
  check_kernel(Kernel::kScalar);
}

TEST(VulkanAttentionPrefill, CoopmatKernel) {
  ZINC_REQUIRE_VULKAN();
  if (!dev().caps().coopmat_nv_f16 || dev().caps().subgroup_size != 32)
    GTEST_SKIP() << "no cooperative matrices with 32-wide subgroups here";
  check_kernel(Kernel::kCoopmat);
}

TEST(VulkanAttentionPrefill, EmulatedCoopmatKernel) {
  ZINC_REQUIRE_VULKAN();
  if (dev().caps().coopmat_nv_f16) GTEST_SKIP() << "the real matrices are here: CoopmatKernel tests the kernel";
  if (ops::Attention::coopmat_shared_bytes(256, 32) > dev().caps().max_compute_shared_bytes)
    GTEST_SKIP() << "the kernel needs " << ops::Attention::coopmat_shared_bytes(256, 32)
                 << " bytes of shared memory, the device has "
                 << dev().caps().max_compute_shared_bytes;
  check_kernel(Kernel::kEmulated);
}

// The decode kernel with its phases timed (bench/vulkan_attention_bench attention_decode_phases)
// computes the same, and every workgroup stores its phases in order: entry, q staged, the first
// tile's scores, the first tile, all tiles, written.
TEST(VulkanAttentionDecode, PhaseClockTimesTheDecodeKernel) {
  ZINC_REQUIRE_VULKAN();
  if (!dev().caps().shader_clock || !dev().caps().subgroup_arithmetic) GTEST_SKIP() << "no shader clock or subgroups";
  auto clock = host_buffer({}, 64 * 16 * 4);
  ops::AttentionOptions opt;
  opt.phase_clock = clock.get();
  auto att = ops::Attention::create(dev(), true, opt);
  ASSERT_TRUE(att.ok()) << att.status().message();
  check_prefill({"8/2 heads dim 128, 2 decode rows at depth 150", 8, 2, 128, 128, false, {{150, 2}}}, **att,
                Kernel::kScalar);
  EXPECT_EQ(phase_workgroups(*clock), 2u * 2u) << "a workgroup per KV head and row";
  for (uint32_t g = 0; g < 2; ++g)  // row 0's (x, the KV head, fastest); row 1 marks only its entry
    for (uint32_t c = 0; c < 2; ++c)
      for (uint32_t phase = 1; phase <= 5; ++phase)
        EXPECT_LE(phase_reading(*clock, g, phase - 1, c), phase_reading(*clock, g, phase, c))
            << "workgroup " << g << " phase " << phase;
  opt.phase_clock = clock.get();
  EXPECT_FALSE(ops::Attention::create(dev(), false, opt).ok()) << "the f32 cache has no decode kernel";
}

}  // namespace
}  // namespace zinc::vulkan::test
