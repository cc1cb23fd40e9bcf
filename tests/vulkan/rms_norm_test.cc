#include "vulkan/ops/rms_norm.h"

#include <cmath>

#include "vk_test_util.h"

namespace zinc::vulkan::test {
namespace {

// Against a double-precision reference; tolerance 1e-5 relative to the row's largest output.
void check_rms_norm(uint32_t n_tokens, uint32_t cols, bool residual, bool subgroups, uint32_t pad = 5) {
  SCOPED_TRACE(testing::Message() << n_tokens << "x" << cols << (residual ? " residual" : "")
                                  << (subgroups ? "" : " no-subgroups"));
  auto op = ops::RmsNorm::create(dev(), subgroups);
  ASSERT_TRUE(op.ok()) << op.status().message();
  const uint32_t stride = cols + pad;
  const float eps = 1e-5f;
  const auto x = random_floats(size_t(n_tokens) * stride, 1), r = random_floats(size_t(n_tokens) * stride, 2, 3.0f);
  const auto w = random_floats(cols, 3);
  auto bx = host_buffer(x), br = host_buffer(r), bw = host_buffer(w), by = host_buffer({}, x.size());
  const ops::Activations ax{{bx.get()}, stride}, ar{{br.get()}, stride}, ay{{by.get()}, stride};
  run([&](Commands& c) {
    // The new residual is written over the old one.
    const Status s = (*op)->record(c, ax, {bw.get()}, ay, n_tokens, cols, eps, residual ? &ar : nullptr,
                                   residual ? &ar : nullptr);
    ASSERT_TRUE(s.ok()) << s.message();
  });
  const auto y = read_floats(*by, x.size()), r_new = read_floats(*br, x.size());
  for (uint32_t t = 0; t < n_tokens; ++t) {
    std::vector<double> v(cols);
    double ss = 0, ymax = 0;
    for (uint32_t k = 0; k < cols; ++k) {
      v[k] = double(x[t * stride + k]) + (residual ? double(r[t * stride + k]) : 0.0);
      ss += v[k] * v[k];
    }
    const double scale = 1.0 / std::sqrt(ss / cols + eps);
    for (uint32_t k = 0; k < cols; ++k) ymax = std::max(ymax, std::fabs(v[k] * scale * w[k]));
    for (uint32_t k = 0; k < cols; ++k) {
      ASSERT_NEAR(y[t * stride + k], v[k] * scale * w[k], 1e-5 * ymax) << t << " " << k;
      if (residual) {
        ASSERT_NEAR(r_new[t * stride + k], v[k], 1e-6 * std::fabs(v[k]) + 1e-7) << t << " " << k;
      }
    }
  }
}

TEST(VulkanRmsNorm, MatchesReference) {
  ZINC_REQUIRE_VULKAN();
  check_rms_norm(1, 4096, false, true);
  check_rms_norm(3, 77, false, true);
  check_rms_norm(70, 300, true, true);
  check_rms_norm(5, 1000, true, false);
  // Rows held in registers (cols and stride multiples of 4), and a row too long for them.
  check_rms_norm(2, 4096, true, true, 4);
  check_rms_norm(3, 2048, false, false, 8);
  check_rms_norm(1, 8192 + 64, true, true, 4);
}

}  // namespace
}  // namespace zinc::vulkan::test
