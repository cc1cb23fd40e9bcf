#include "vulkan/ops/matvec.h"

#include <cmath>
#include <map>
#include <tuple>

#include "vk_test_util.h"
#include "vulkan/shaders.h"

namespace zinc::vulkan::test {
namespace {

using ops::Activations;
using ops::Matvec;
using ops::MatvecOptions;

// Float path: |y - ref| <= 1e-5 * sum_k |w x| + 1e-5 (float32 sums in another order).
// Int8 path: x is rounded to int8 per 32-group (error <= amax_group / 254 per element), so the
// bound adds sum over groups of amax_group / 254 * sum_k |w| in that group, times 1.1 for rounding.
struct Reference {
  std::vector<float> y, tol;
};

Reference reference(const Matrix& m, const std::vector<float>& x, uint32_t x_stride, uint32_t n_tokens, bool int8) {
  Reference ref;
  ref.y.resize(size_t(n_tokens) * m.rows);
  ref.tol.resize(ref.y.size());
  for (uint32_t t = 0; t < n_tokens; ++t)
    for (int64_t r = 0; r < m.rows; ++r) {
      double acc = 0, mag = 0, qerr = 0;
      for (int64_t g = 0; g < (m.cols + 31) / 32; ++g) {
        double amax = 0, wsum = 0;
        for (int64_t k = 32 * g; k < std::min<int64_t>(m.cols, 32 * g + 32); ++k) {
          const double w = m.values[size_t(r * m.cols + k)], xv = x[t * x_stride + k];
          acc += w * xv;
          mag += std::fabs(w * xv);
          amax = std::max(amax, std::fabs(xv));
          wsum += std::fabs(w);
        }
        qerr += amax / 254.0 * wsum;
      }
      ref.y[t * m.rows + r] = float(acc);
      ref.tol[t * m.rows + r] = float(1e-5 * mag + 1e-5 + (int8 ? 1.1 * qerr : 0.0));
    }
  return ref;
}

// One op per configuration for the whole binary: lavapipe compiles each pipeline slowly.
const Matvec* matvec_for(TensorType type, const MatvecOptions& o) {
  static std::map<std::tuple<int, bool, bool, bool, bool, uint32_t, uint32_t, uint32_t, const Buffer*, bool>,
                  std::unique_ptr<Matvec>>
      cache;
  auto& slot = cache[{int(type), o.int8, o.swiglu, o.subgroup, o.staged, o.group_size, o.rows, o.k_slices,
                      o.phase_clock, o.prequantized_x}];
  if (!slot) {
    auto mv = Matvec::create(dev(), type, o);
    EXPECT_TRUE(mv.ok()) << mv.status().message();
    if (mv.ok()) slot = std::move(*mv);
  }
  return slot.get();
}

// Runs y = W x (or the SwiGLU pair) on the device and compares with the reference.
void check_matvec(TensorType type, int64_t rows, int64_t cols, uint32_t n_tokens, const MatvecOptions& opt,
                  uint64_t max_chunk_bytes = 0, bool residual = false, bool norm = false, bool write_norm = false) {
  SCOPED_TRACE(testing::Message() << type_name(type) << " " << rows << "x" << cols << " tokens " << n_tokens
                                  << (opt.int8 ? " int8" : " float") << (opt.swiglu ? " swiglu" : "")
                                  << (residual ? " +residual" : "") << (norm ? " +norm" : "")
                                  << (write_norm ? " (written)" : ""));
  const Matvec* mv = matvec_for(type, opt);
  ASSERT_NE(mv, nullptr);
  const Matrix a = random_matrix(type, rows, cols, 11 + uint32_t(rows));
  const Matrix b = random_matrix(type, rows, cols, 29 + uint32_t(cols));
  auto wa = upload(a, max_chunk_bytes), wb = upload(b, max_chunk_bytes);
  ASSERT_TRUE(wa && wb);
  if (max_chunk_bytes) {
    EXPECT_GT(wa->chunks().size(), 1u);
  }
  const uint32_t x_stride =
      opt.prequantized_x ? uint32_t((cols + 31) / 32 * 32) + 32 : uint32_t((cols + 3) / 4 * 4) + 4;
  const uint32_t y_stride = uint32_t(rows) + 3;
  const std::vector<float> x = random_floats(size_t(n_tokens) * x_stride, 5 + n_tokens);
  const std::vector<float> res = random_floats(size_t(n_tokens) * y_stride, 77);
  // With norm the reference multiplies by the normalised x: x * w / sqrt(mean(x^2) + eps).
  const std::vector<float> norm_w = random_floats(size_t(cols), 91);
  const float eps = 1e-5f;
  std::vector<float> xn = x;
  if (norm)
    for (uint32_t t = 0; t < n_tokens; ++t) {
      double ss = 0;
      for (int64_t k = 0; k < cols; ++k) ss += double(x[t * x_stride + k]) * x[t * x_stride + k];
      const double scale = 1.0 / std::sqrt(ss / double(cols) + eps);
      for (int64_t k = 0; k < cols; ++k) xn[t * x_stride + k] = float(x[t * x_stride + k] * scale * norm_w[size_t(k)]);
    }
  std::vector<float> x_in = x;  // as the kernel reads it: floats, or prequantize_x's records
  if (opt.prequantized_x) {
    const std::vector<uint32_t> records =
        Matvec::prequantize_x(x.data(), n_tokens, x_stride, uint32_t(cols), norm ? norm_w.data() : nullptr);
    x_in.resize(records.size());
    std::memcpy(x_in.data(), records.data(), records.size() * 4);
  }
  auto bx = host_buffer(x_in), bw = host_buffer(norm_w);
  auto by = host_buffer(residual ? res : std::vector<float>(), size_t(n_tokens) * y_stride);
  const Activations ax{{bx.get()}, x_stride}, ay{{by.get()}, y_stride};
  auto bxn = host_buffer({}, x.size());
  const Activations axn{{bxn.get()}, x_stride};
  const ops::InputNorm in_norm{{bw.get()}, eps, write_norm ? &axn : nullptr};
  run([&](Commands& c) {
    const Activations* r = residual ? &ay : nullptr;
    const ops::InputNorm* n = norm ? &in_norm : nullptr;
    const Status s = opt.swiglu ? mv->record_swiglu(c, *wa, *wb, ax, ay, n_tokens, r, n)
                                : mv->record(c, *wa, ax, ay, n_tokens, r, n);
    ASSERT_TRUE(s.ok()) << s.message();
  });
  const bool int8 = mv->uses_int8();
  const Reference ra = reference(a, xn, x_stride, n_tokens, int8);
  const Reference rb = reference(b, xn, x_stride, n_tokens, int8);
  const std::vector<float> y = read_floats(*by, size_t(n_tokens) * y_stride);
  int bad = 0;
  for (uint32_t t = 0; t < n_tokens; ++t)
    for (int64_t r = 0; r < rows; ++r) {
      const size_t i = size_t(t * rows + r);
      float want = ra.y[i], tol = ra.tol[i];
      if (opt.swiglu) {
        const float g = ra.y[i], u = rb.y[i];
        const float sg = 1.0f / (1.0f + std::exp(-g));
        want = g * sg * u;
        // d(silu(g) u) = u * silu'(g) dg + silu(g) du, with |silu'| <= 1.1
        tol = 1.1f * std::fabs(u) * ra.tol[i] + std::fabs(g * sg) * rb.tol[i] + 1e-5f;
      }
      if (norm) tol += 2e-6f * std::fabs(want);  // the scale, summed in float32
      if (residual) want += res[t * y_stride + r];
      const float got = y[t * y_stride + r];
      if (!(std::fabs(got - want) <= tol) && ++bad <= 5) {
        ADD_FAILURE() << "token " << t << " row " << r << ": got " << got << " want " << want << " tol " << tol;
      }
    }
  EXPECT_EQ(bad, 0);
  if (write_norm) {
    const std::vector<float> got = read_floats(*bxn, x.size());
    for (uint32_t t = 0; t < n_tokens; ++t)
      for (int64_t k = 0; k < cols; ++k) {
        const float want = xn[t * x_stride + k];
        EXPECT_NEAR(got[t * x_stride + k], want, 1e-5f * std::fabs(want) + 1e-7f) << "normalised x " << t << "," << k;
      }
  }
}

const TensorType kAllTypes[] = {TensorType::F32,   TensorType::F16,    TensorType::BF16,  TensorType::Q4_0,
                                TensorType::Q4_1,  TensorType::Q5_0,   TensorType::Q5_1,  TensorType::Q8_0,
                                TensorType::IQ4_NL, TensorType::MXFP4, TensorType::Q2_K,  TensorType::Q3_K,
                                TensorType::Q4_K,  TensorType::Q5_K,   TensorType::Q6_K,  TensorType::IQ4_XS};

// Every type on the float path and the int8 path: rows not a multiple of the rows per
// workgroup, three super-blocks of columns, 1, 3 and 8 tokens.
TEST(VulkanMatvec, EveryTypeMatchesReference) {
  ZINC_REQUIRE_VULKAN();
  MatvecOptions opt;
  opt.int8 = false;
  for (TensorType t : kAllTypes) check_matvec(t, 77, 768, 3, opt);
  for (TensorType t : {TensorType::Q4_K, TensorType::Q6_K, TensorType::F16}) {
    check_matvec(t, 77, 768, 1, opt);
    check_matvec(t, 77, 768, 8, opt);
  }
}

TEST(VulkanMatvec, Int8EveryTypeMatchesReference) {
  ZINC_REQUIRE_VULKAN();
  if (!dev().caps().int8_dot) GTEST_SKIP() << "no integer dot product on " << dev().caps().name;
  MatvecOptions opt;
  for (TensorType t : kAllTypes)
    if (matvec_for(t, opt)->uses_int8()) check_matvec(t, 77, 768, 1, opt);
  check_matvec(TensorType::Q4_K, 77, 768, 8, opt);
}

TEST(VulkanMatvec, OddColumnCountsAndBlockCounts) {
  ZINC_REQUIRE_VULKAN();
  MatvecOptions opt;
  opt.int8 = false;
  check_matvec(TensorType::F32, 45, 100, 3, opt);   // a partial last group
  check_matvec(TensorType::F16, 33, 172, 1, opt);
  check_matvec(TensorType::Q4_0, 70, 32, 2, opt);   // one block
  check_matvec(TensorType::Q8_0, 19, 4096 + 32, 1, opt);
  check_matvec(TensorType::Q4_K, 130, 256, 1, opt);  // one super-block
  check_matvec(TensorType::Q6_K, 5, 256 * 17, 8, opt);
}

TEST(VulkanMatvec, SwigluAndResidual) {
  ZINC_REQUIRE_VULKAN();
  MatvecOptions opt;
  opt.swiglu = true;
  for (TensorType t : {TensorType::Q4_K, TensorType::Q8_0, TensorType::F16}) {
    check_matvec(t, 61, 512, 1, opt);
    check_matvec(t, 61, 512, 5, opt, 0, true);
  }
  opt.swiglu = false;
  check_matvec(TensorType::Q6_K, 61, 512, 2, opt, 0, true);
}

// x normalised on the fly (the RMSNorm before a projection), alone and with SwiGLU and a residual.
TEST(VulkanMatvec, InputNorm) {
  ZINC_REQUIRE_VULKAN();
  MatvecOptions opt;
  check_matvec(TensorType::Q4_K, 77, 768, 1, opt, 0, false, true);
  check_matvec(TensorType::Q6_K, 61, 512, 3, opt, 0, true, true);
  check_matvec(TensorType::Q4_K, 77, 768, 2, opt, 0, false, true, true);  // and writes the normalised x
  opt.int8 = false;
  check_matvec(TensorType::F32, 45, 100, 3, opt, 0, false, true, true);
  check_matvec(TensorType::F32, 45, 100, 2, opt, 0, false, true);  // a partial last group
  check_matvec(TensorType::Q8_0, 40, 256, 1, opt, 0, false, true);
  opt.swiglu = true;
  check_matvec(TensorType::Q4_K, 61, 512, 2, opt, 0, true, true);
  opt.subgroup = false;
  check_matvec(TensorType::Q5_K, 33, 512, 1, opt, 0, false, true);
}

// The int8 kernel with x staged in shared memory (the default where subgroups exist) and the
// one without: several tokens, the larger staging tiers, row counts not a multiple of the rows
// per workgroup, other workgroup shapes.
TEST(VulkanMatvec, StagedAndUnstagedInt8) {
  ZINC_REQUIRE_VULKAN();
  if (!dev().caps().int8_dot || !dev().caps().subgroup_arithmetic) GTEST_SKIP() << "no int8 dot or subgroups";
  MatvecOptions opt;
  for (bool staged : {true, false}) {
    opt.staged = staged;
    EXPECT_EQ(matvec_for(TensorType::Q4_K, opt)->uses_staged(256 * 20), staged);
    check_matvec(TensorType::Q4_K, 133, 256 * 20, 3, opt);  // 160 groups: the second tier
    check_matvec(TensorType::Q6_K, 70, 512, 2, opt, 0, true, true);
    check_matvec(TensorType::Q8_0, 9, 32 * 7, 1, opt);
  }
  opt.staged = true;
  opt.rows = 3;
  opt.group_size = 64;
  check_matvec(TensorType::Q5_K, 50, 512, 2, opt);
  opt.swiglu = true;
  check_matvec(TensorType::Q4_0, 51, 1024, 2, opt, 0, true, true);
  // Groups split over several subgroups per row step (a power of two or not).
  opt.swiglu = false;
  opt.group_size = 128;
  opt.rows = 4;
  opt.k_slices = 4;
  check_matvec(TensorType::Q4_K, 70, 256 * 6, 2, opt, 0, true, true);
  opt.rows = 3;
  opt.k_slices = 3;
  check_matvec(TensorType::Q6_K, 29, 256 * 3, 1, opt);
  opt.swiglu = true;
  opt.rows = 2;
  opt.k_slices = 2;
  check_matvec(TensorType::Q8_0, 33, 32 * 40, 3, opt, 0, true);
  opt.swiglu = false;
  opt.rows = 0;
  opt.k_slices = 0;
  opt.group_size = 256;
  check_matvec(TensorType::Q2_K, 1100, 256, 1, opt);
  check_matvec(TensorType::Q3_K, 40, 256 * 3, 4, opt);
  // Enough rows that each subgroup takes several row steps in turn (Matvec::staged_shape).
  opt.group_size = 0;
  check_matvec(TensorType::Q8_0, 60001, 64, 2, opt);
  opt.swiglu = true;
  check_matvec(TensorType::Q4_0, 30001, 64, 1, opt, 0, true);
}

// The staged kernel with its phases timed (bench/vulkan_phase_bench.cc) computes the same, and
// every workgroup stores its phases in order: entry, x staged, its row passes, done.
TEST(VulkanMatvec, PhaseClockTimesTheStagedKernel) {
  ZINC_REQUIRE_VULKAN();
  const DeviceCaps& caps = dev().caps();
  if (!caps.shader_clock || !caps.int8_dot || !caps.subgroup_arithmetic) GTEST_SKIP() << "no shader clock";
  constexpr uint32_t kMaxGroups = 64;
  auto clock = host_buffer({}, kMaxGroups * ops::kPhaseClockBytes / 4);
  MatvecOptions opt;
  opt.phase_clock = clock.get();
  check_matvec(TensorType::Q4_K, 300, 512, 1, opt, 0, false, true);
  check_matvec(TensorType::Q6_K, 200, 768, 2, opt, 0, true);
  const uint32_t groups = phase_workgroups(*clock);
  EXPECT_GT(groups, 1u);
  for (uint32_t g = groups; g < kMaxGroups; ++g) EXPECT_EQ(phase_reading(*clock, g, 0, 0), 0u) << "workgroup " << g;
  for (uint32_t g = 0; g < groups; ++g)
    for (uint32_t c = 0; c < 2; ++c) {
      EXPECT_LE(phase_reading(*clock, g, 0, c), phase_reading(*clock, g, 1, c)) << "workgroup " << g << " staged early";
      EXPECT_LE(phase_reading(*clock, g, 1, c), phase_reading(*clock, g, 2, c)) << "workgroup " << g << " pass 0 early";
      EXPECT_LE(phase_reading(*clock, g, 2, c), phase_reading(*clock, g, 10, c)) << "workgroup " << g << " done early";
    }
  opt.phase_clock = clock.get();
  EXPECT_FALSE(Matvec::create(dev(), TensorType::Q8_0, opt).ok()) << "Q8_0 has no timed variant";
}

// x prequantized (Matvec::prequantize_x's records instead of floats): with the norm (its scale
// from the records' sums of squares), a residual, SwiGLU pairs, several tokens and row passes.
TEST(VulkanMatvec, PrequantizedX) {
  ZINC_REQUIRE_VULKAN();
  if (!dev().caps().int8_dot || !dev().caps().subgroup_arithmetic) GTEST_SKIP() << "no int8 dot or subgroups";
  MatvecOptions opt;
  opt.prequantized_x = true;
  check_matvec(TensorType::Q4_K, 300, 512, 1, opt, 0, false, true);
  check_matvec(TensorType::Q6_K, 200, 768, 2, opt, 0, true);
  check_matvec(TensorType::Q4_K, 40001, 256, 1, opt, 0, true, true);  // several row passes
  opt.swiglu = true;
  check_matvec(TensorType::Q4_K, 70, 1024, 3, opt, 0, false, true);
  opt.swiglu = false;
  EXPECT_FALSE(Matvec::create(dev(), TensorType::Q8_0, opt).ok()) << "Q8_0 has no prequantized variant";
  opt.rows = 4;
  opt.k_slices = 2;
  EXPECT_FALSE(Matvec::create(dev(), TensorType::Q4_K, opt).ok()) << "k_slices";
}

// The shared-memory reductions (devices without subgroup arithmetic) and other workgroup shapes.
TEST(VulkanMatvec, WithoutSubgroupsAndOtherShapes) {
  ZINC_REQUIRE_VULKAN();
  MatvecOptions opt;
  opt.subgroup = false;
  check_matvec(TensorType::Q4_K, 77, 768, 3, opt);
  opt.int8 = false;
  check_matvec(TensorType::Q5_1, 77, 768, 1, opt);
  opt.subgroup = true;
  opt.group_size = 32;
  opt.rows = 3;
  check_matvec(TensorType::Q3_K, 50, 512, 4, opt);
  opt.swiglu = true;
  opt.subgroup = false;
  check_matvec(TensorType::Q4_0, 50, 512, 2, opt);
}

// A matrix split into several buffers by rows gives the same result.
TEST(VulkanMatvec, ChunkedWeights) {
  ZINC_REQUIRE_VULKAN();
  MatvecOptions opt;
  opt.int8 = false;
  check_matvec(TensorType::Q4_K, 300, 512, 2, opt, 64 * 1024);
  check_matvec(TensorType::F32, 200, 256, 1, opt, 64 * 1024);
}

TEST(VulkanShaders, EveryEmbeddedShaderIsSpirv) {
  ASSERT_FALSE(all_shaders().empty());
  for (const auto& s : all_shaders()) {
    ASSERT_GT(s.spirv.size(), 5u) << s.name;
    EXPECT_EQ(s.spirv[0], 0x07230203u) << s.name;
  }
}

}  // namespace
}  // namespace zinc::vulkan::test
