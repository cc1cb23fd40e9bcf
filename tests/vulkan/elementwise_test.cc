#include "vulkan/ops/elementwise.h"

#include <cmath>

#include "vk_test_util.h"

namespace zinc::vulkan::test {
namespace {

TEST(VulkanElementwise, AddSwigluMul) {
  ZINC_REQUIRE_VULKAN();
  const uint32_t n = 256 * 4096 + 37;  // more elements than threads launched: exercises the stride loop
  const auto a = random_floats(n, 1, 3.0f), b = random_floats(n, 2);
  for (auto op : {ops::ElementwiseOp::kAdd, ops::ElementwiseOp::kSwiglu, ops::ElementwiseOp::kMul}) {
    SCOPED_TRACE(int(op));
    auto e = ops::Elementwise::create(dev(), op);
    ASSERT_TRUE(e.ok()) << e.status().message();
    auto ba = host_buffer(a), bb = host_buffer(b), bc = host_buffer({}, n);
    run([&](Commands& c) { ASSERT_TRUE((*e)->record(c, {ba.get()}, {bb.get()}, {bc.get()}, n).ok()); });
    const auto c = read_floats(*bc, n);
    for (uint32_t i = 0; i < n; ++i) {
      const double u = a[i], v = b[i];
      const double want = op == ops::ElementwiseOp::kAdd ? u + v : op == ops::ElementwiseOp::kMul ? u * v
                                                                                                  : u / (1 + std::exp(-u)) * v;
      ASSERT_NEAR(c[i], want, 1e-5 * (1 + std::fabs(want))) << i;
    }
  }
}

}  // namespace
}  // namespace zinc::vulkan::test
