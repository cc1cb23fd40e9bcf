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

// One recording of more dispatches than a descriptor pool of Commands holds (1024 sets), twice:
// every dispatch reads the buffers it was recorded with, and a new recording reuses the pools.
TEST(VulkanElementwise, RecordingsOfManyDispatches) {
  ZINC_REQUIRE_VULKAN();
  const uint32_t n = 1000, steps = 2500;
  const auto a = random_floats(n, 3), b = random_floats(n, 4);
  auto e = ops::Elementwise::create(dev(), ops::ElementwiseOp::kAdd);
  ASSERT_TRUE(e.ok()) << e.status().message();
  for (int round = 0; round < 2; ++round) {
    auto x = host_buffer(a), y = host_buffer({}, n), d = host_buffer(b);
    run([&](Commands& c) {  // x += d, alternating through y: x ends as a + steps * d
      for (uint32_t i = 0; i < steps; ++i) {
        const bool even = i % 2 == 0;
        ASSERT_TRUE((*e)->record(c, {even ? x.get() : y.get()}, {d.get()}, {even ? y.get() : x.get()}, n).ok());
        c.compute_barrier();
      }
    });
    const auto out = read_floats(steps % 2 == 0 ? *x : *y, n);
    for (uint32_t i = 0; i < n; ++i) {
      const double want = double(a[i]) + double(steps) * b[i];
      ASSERT_NEAR(out[i], want, 1e-3 * (1 + std::fabs(want))) << round << " " << i;
    }
  }
}

}  // namespace
}  // namespace zinc::vulkan::test
