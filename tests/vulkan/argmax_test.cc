#include "vulkan/ops/argmax.h"

#include <cmath>
#include <cstring>
#include <limits>

#include "vk_test_util.h"

namespace zinc::vulkan::test {
namespace {

// The first index of the largest value that is not NaN (0 when there is none), as the kernel.
uint32_t reference_argmax(const float* row, uint32_t cols) {
  uint32_t best = 0;
  bool found = false;
  for (uint32_t k = 0; k < cols; ++k)
    if (!std::isnan(row[k]) && (!found || row[k] > row[best])) {
      best = k;
      found = true;
    }
  return best;
}

// Random rows with planted cases, one workgroup per row and (with scratch) sliced rows.
TEST(VulkanArgmax, MatchesReference) {
  ZINC_REQUIRE_VULKAN();
  const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
  for (bool subgroups : {true, false}) {
    auto op = ops::Argmax::create(dev(), subgroups);
    ASSERT_TRUE(op.ok()) << op.status().message();
    const uint32_t n_tokens = 7, cols = 32003, stride = 32008;
    auto x = random_floats(size_t(n_tokens) * stride, 9);
    x[2 * stride + 30000] = 10.0f;  // row 2: a tie between 1234 and 30000 (other slices)
    x[2 * stride + 1234] = 10.0f;
    x[4 * stride + 31999] = 50.0f;  // row 4: the winner near the end
    for (uint32_t k = 0; k < cols; ++k) {
      x[5 * stride + k] = k < 20000 ? nan : -inf;  // row 5: NaN never wins, -inf does
      x[6 * stride + k] = nan;                     // row 6: no number at all: 0
    }
    x[3 * stride + 5] = nan;  // row 3: a NaN among numbers
    auto scratch = Buffer::create(dev(), ops::Argmax::scratch_bytes(n_tokens), MemoryKind::kHostVisible);
    ASSERT_TRUE(scratch.ok());
    std::memset((*scratch)->mapped(), 0, (*scratch)->size_bytes());
    for (bool sliced : {false, true}) {
      auto bx = host_buffer(x), bo = host_buffer({}, n_tokens);
      for (int rep = 0; rep < 2; ++rep)  // the sliced form leaves its counters at zero for the next run
        run([&](Commands& c) {
          ASSERT_TRUE((*op)->record(c, {{bx.get()}, stride}, {bo.get()}, n_tokens, cols,
                                    sliced ? scratch->get() : nullptr).ok());
        });
      const auto* got = static_cast<const uint32_t*>(bo->mapped());
      for (uint32_t t = 0; t < n_tokens; ++t)
        EXPECT_EQ(got[t], reference_argmax(x.data() + size_t(t) * stride, cols))
            << "row " << t << " subgroups " << subgroups << " sliced " << sliced;
      EXPECT_EQ(got[2], 1234u);
      EXPECT_EQ(got[5], 20000u);
      EXPECT_EQ(got[6], 0u);
    }
  }
}

}  // namespace
}  // namespace zinc::vulkan::test
