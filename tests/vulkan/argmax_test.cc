#include "vulkan/ops/argmax.h"

#include "vk_test_util.h"

namespace zinc::vulkan::test {
namespace {

// Random rows (with a planted tie: the first index must win), against std::max_element.
TEST(VulkanArgmax, MatchesReference) {
  ZINC_REQUIRE_VULKAN();
  for (bool subgroups : {true, false}) {
    auto op = ops::Argmax::create(dev(), subgroups);
    ASSERT_TRUE(op.ok()) << op.status().message();
    const uint32_t n_tokens = 5, cols = 32003, stride = 32008;
    auto x = random_floats(size_t(n_tokens) * stride, 9);
    x[2 * stride + 30000] = 10.0f;  // row 2: a tie between 1234 and 30000
    x[2 * stride + 1234] = 10.0f;
    x[4 * stride + 31999] = 50.0f;  // row 4: the winner near the end
    auto bx = host_buffer(x), bo = host_buffer({}, n_tokens);
    run([&](Commands& c) {
      ASSERT_TRUE((*op)->record(c, {{bx.get()}, stride}, {bo.get()}, n_tokens, cols).ok());
    });
    const auto* got = static_cast<const uint32_t*>(bo->mapped());
    for (uint32_t t = 0; t < n_tokens; ++t) {
      const float* row = x.data() + size_t(t) * stride;
      EXPECT_EQ(got[t], uint32_t(std::max_element(row, row + cols) - row)) << "row " << t << " subgroups " << subgroups;
    }
  }
}

}  // namespace
}  // namespace zinc::vulkan::test
