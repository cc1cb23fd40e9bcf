#include "vulkan/ops/get_rows.h"

#include <cmath>

#include "vk_test_util.h"

namespace zinc::vulkan::test {
namespace {

// Rows picked by id (repeats, first and last rows, across chunks) match the CPU dequantization
// bit for bit, except for the fused multiply-add of A * code + B (1 ulp-level, tolerance 1e-6).
TEST(VulkanGetRows, MatchesDequantization) {
  ZINC_REQUIRE_VULKAN();
  for (TensorType t : {TensorType::Q4_K, TensorType::Q6_K, TensorType::Q8_0, TensorType::F16, TensorType::IQ4_NL}) {
    SCOPED_TRACE(type_name(t));
    auto op = ops::GetRows::create(dev(), t);
    ASSERT_TRUE(op.ok()) << op.status().message();
    const int64_t rows = 300, cols = 512;
    const Matrix m = random_matrix(t, rows, cols, 4);
    auto w = upload(m, 64 * 1024);  // several chunks
    ASSERT_TRUE(w);
    const std::vector<uint32_t> ids = {0, 299, 5, 5, 150, 64, 200};
    auto bi = Buffer::create(dev(), ids.size() * 4, MemoryKind::kHostVisible);
    ASSERT_TRUE(bi.ok());
    std::memcpy((*bi)->mapped(), ids.data(), ids.size() * 4);
    const uint32_t stride = cols + 4;
    auto bo = host_buffer({}, ids.size() * stride);
    run([&](Commands& c) {
      const Status s = (*op)->record(c, *w, {bi->get()}, {{bo.get()}, stride}, uint32_t(ids.size()));
      ASSERT_TRUE(s.ok()) << s.message();
    });
    const auto out = read_floats(*bo, ids.size() * stride);
    for (size_t i = 0; i < ids.size(); ++i)
      for (int64_t k = 0; k < cols; ++k) {
        const float want = m.values[size_t(ids[i] * cols + k)];
        ASSERT_NEAR(out[i * stride + k], want, 1e-6f * (1.0f + std::fabs(want))) << "id " << ids[i] << " col " << k;
      }
  }
}

}  // namespace
}  // namespace zinc::vulkan::test
