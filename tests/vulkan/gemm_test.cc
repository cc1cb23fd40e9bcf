#include "vulkan/ops/gemm.h"

#include <cmath>
#include <map>

#include "vk_test_util.h"

namespace zinc::vulkan::test {
namespace {

// One op per (type, kernel) for the whole binary: lavapipe compiles each pipeline slowly.
const ops::Gemm* gemm_for(TensorType type, bool coopmat, int tile = -1) {
  static std::map<std::tuple<int, bool, int>, std::unique_ptr<ops::Gemm>> cache;
  auto& slot = cache[{int(type), coopmat, tile}];
  if (!slot) {
    ops::GemmOptions opt;
    opt.coopmat = coopmat;
    opt.tile = tile;
    auto g = ops::Gemm::create(dev(), type, opt);
    EXPECT_TRUE(g.ok()) << g.status().message();
    if (g.ok()) slot = std::move(*g);
  }
  return slot.get();
}

// Against float64 sums of the exact dequantization. Tolerance per output: 1e-5 * sum |w x|
// for the float32 kernel; 2e-3 * sum |w x| for the cooperative-matrix one (f16 inputs: each
// weight and x rounded to 11 bits). y rows are rows + 1 floats apart (the cooperative-matrix
// kernel's element-wise stores), or rows rounded up to 4 with `aligned` (its matrix stores).
// With split_k, record() gets a partials buffer and the shape must make it split K.
void check_gemm(TensorType type, int64_t rows, int64_t cols, uint32_t n_tokens, bool coopmat, bool residual = false,
                uint64_t max_chunk_bytes = 0, int tile = -1, bool aligned = false, bool split_k = false) {
  SCOPED_TRACE(testing::Message() << type_name(type) << " " << rows << "x" << cols << " tokens " << n_tokens
                                  << (residual ? " +residual" : "") << " tile " << tile
                                  << (aligned ? " aligned" : "") << (split_k ? " split K" : ""));
  const ops::Gemm* op = gemm_for(type, coopmat, tile);
  ASSERT_NE(op, nullptr);
  std::unique_ptr<Buffer> partials;
  if (split_k) {
    ASSERT_GT(op->k_splits(uint32_t(rows), uint32_t(cols), n_tokens), 1u);
    const uint64_t floats = op->partial_floats(uint32_t(rows), uint32_t(cols), n_tokens);
    partials = host_buffer(std::vector<float>(), size_t(floats));
  }
  const Matrix m = random_matrix(type, rows, cols, 3 + uint32_t(rows));
  auto w = upload(m, max_chunk_bytes);
  ASSERT_TRUE(w);
  const uint32_t x_stride = uint32_t((cols + 3) / 4 * 4);
  const uint32_t y_stride = aligned ? uint32_t((rows + 3) / 4 * 4) : uint32_t(rows) + 1;
  const auto x = random_floats(size_t(n_tokens) * x_stride, 17);
  const auto res = random_floats(size_t(n_tokens) * y_stride, 19);
  auto bx = host_buffer(x), by = host_buffer(residual ? res : std::vector<float>(), size_t(n_tokens) * y_stride);
  const ops::Activations ax{{bx.get()}, x_stride}, ay{{by.get()}, y_stride};
  run([&](Commands& c) {
    const BufferRange part{partials.get()};
    const Status s = op->record(c, *w, ax, ay, n_tokens, residual ? &ay : nullptr, partials ? &part : nullptr);
    ASSERT_TRUE(s.ok()) << s.message();
  });
  const double rel = op->uses_coopmat() ? 2e-3 : 1e-5;
  const auto y = read_floats(*by, size_t(n_tokens) * y_stride);
  int bad = 0;
  for (uint32_t t = 0; t < n_tokens; ++t)
    for (int64_t r = 0; r < rows; ++r) {
      double acc = 0, mag = 0;
      for (int64_t k = 0; k < cols; ++k) {
        const double p = double(m.values[size_t(r * cols + k)]) * x[t * x_stride + k];
        acc += p;
        mag += std::fabs(p);
      }
      if (residual) acc += res[t * y_stride + r];
      const double got = y[t * y_stride + r];
      if (!(std::fabs(got - acc) <= rel * mag + 1e-5) && ++bad <= 5) {
        ADD_FAILURE() << "token " << t << " row " << r << ": got " << got << " want " << acc;
      }
    }
  EXPECT_EQ(bad, 0);
}

// Every type; rows and tokens that are not multiples of the tiles; 1, 3 and 70 tokens.
TEST(VulkanGemm, EveryTypeMatchesReference) {
  ZINC_REQUIRE_VULKAN();
  for (TensorType t : {TensorType::F32, TensorType::F16, TensorType::BF16, TensorType::Q4_0, TensorType::Q4_1,
                       TensorType::Q5_0, TensorType::Q5_1, TensorType::Q8_0, TensorType::IQ4_NL, TensorType::MXFP4,
                       TensorType::Q2_K, TensorType::Q3_K, TensorType::Q4_K, TensorType::Q5_K, TensorType::Q6_K,
                       TensorType::IQ4_XS})
    check_gemm(t, 70, 512, 70, true);
}

TEST(VulkanGemm, ShapesResidualAndChunks) {
  ZINC_REQUIRE_VULKAN();
  for (uint32_t n : {1u, 3u, 130u}) check_gemm(TensorType::Q4_K, 131, 768, n, true);
  check_gemm(TensorType::F32, 33, 100, 9, true);  // a partial last group of columns
  check_gemm(TensorType::Q6_K, 65, 256, 70, true, true);
  check_gemm(TensorType::Q8_0, 300, 256, 20, true, false, 32 * 1024);
}

// Every cooperative-matrix tile, with full and partial matrices, y aligned (matrix stores, the
// residual loaded into the accumulators) and not, weights in chunks, odd and even K step counts.
TEST(VulkanGemm, EveryTile) {
  ZINC_REQUIRE_VULKAN();
  if (!dev().caps().coopmat_nv_f16) GTEST_SKIP() << "no cooperative matrices here";
  for (int t = 0; t < int(ops::Gemm::coopmat_tiles().size()); ++t) {
    check_gemm(TensorType::Q4_K, 272, 512, 150, true, true, 0, t, true);
    check_gemm(TensorType::Q6_K, 131, 512, 37, true, true, 0, t, false);
    check_gemm(TensorType::F16, 96, 96, 16, true, false, 0, t, true);
    check_gemm(TensorType::F32, 33, 100, 9, true, false, 0, t, true);
    check_gemm(TensorType::Q8_0, 300, 160, 70, true, true, 32 * 1024, t, true);  // 3 K steps
    check_gemm(TensorType::F16, 40, 32, 20, true, true, 0, t, true);            // 1 K step
  }
}

// K split over several workgroups where the tiles are few: splits of whole and partial K steps,
// a partial last group, the residual added by the reduction, weights in chunks, every tile.
TEST(VulkanGemm, SplitK) {
  ZINC_REQUIRE_VULKAN();
  const int n_tiles = dev().caps().coopmat_nv_f16 ? int(ops::Gemm::coopmat_tiles().size()) : 1;
  for (int t = 0; t < n_tiles; ++t) {
    const int tile = n_tiles > 1 ? t : -1;
    check_gemm(TensorType::Q4_K, 70, 2048, 70, true, true, 0, tile, true, true);
    check_gemm(TensorType::Q6_K, 33, 1280, 9, true, false, 0, tile, false, true);
    check_gemm(TensorType::F32, 20, 1000, 40, true, true, 0, tile, false, true);
    check_gemm(TensorType::Q8_0, 130, 1024, 20, true, true, 32 * 1024, tile, true, true);
  }
  EXPECT_EQ(gemm_for(TensorType::Q4_K, true)->k_splits(4096, 4096, 512), 1u);  // enough tiles already
  EXPECT_EQ(gemm_for(TensorType::Q4_K, true)->partial_floats(4096, 4096, 512), 0u);
}

TEST(VulkanGemm, PickTile) {
  const auto tiles = ops::Gemm::coopmat_tiles();
  for (uint32_t rows : {1024u, 4096u, 14336u, 128256u})
    for (uint32_t n : {9u, 64u, 512u}) EXPECT_LT(ops::Gemm::pick_tile(rows, n), tiles.size());
}

// The scalar kernel where the cooperative-matrix one is the default (NVIDIA); on other devices
// this repeats the default.
TEST(VulkanGemm, ScalarKernel) {
  ZINC_REQUIRE_VULKAN();
  if (!dev().caps().coopmat_nv_f16) GTEST_SKIP() << "the scalar kernel is the default here";
  check_gemm(TensorType::Q4_K, 131, 512, 70, false);
  check_gemm(TensorType::F16, 64, 256, 64, false, true);
}

}  // namespace
}  // namespace zinc::vulkan::test
