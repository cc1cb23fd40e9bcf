// --backend vulkan through the zinc binary (on lavapipe in CI): a clear error for architectures
// the Vulkan executor lacks, bench --profile (greedy stories260K on Vulkan: run_test.cc).
#include <gtest/gtest.h>

#include "support/test_data.h"

namespace zinc::test {
namespace {

bool have_vulkan() {
  static const bool ok = [] {
    std::string out;
    return run_command(zinc_binary() + " devices 2>&1", &out) == 0 && out.find("no Vulkan") == std::string::npos;
  }();
  return ok;
}

#define REQUIRE_VULKAN() \
  if (!have_vulkan()) GTEST_SKIP() << "no Vulkan device"

TEST(VulkanBackend, UnsupportedArchitectureIsAClearError) {
  ZINC_REQUIRE_TEST_DATA();
  std::string out;
  EXPECT_EQ(run_command(zinc_binary() + " run -m " + data_path("models/qwen3moe-q8_0.gguf") +
                            " --tokens 1,2 -n 1 --backend vulkan 2>&1",
                        &out),
            1);
  EXPECT_NE(out.find("error: --backend vulkan: architecture qwen3moe does not run on Vulkan yet"), std::string::npos)
      << out;
}

TEST(VulkanBackend, BenchProfilesTheDecodeStep) {
  ZINC_REQUIRE_TEST_DATA();
  REQUIRE_VULKAN();
  std::string out;
  ASSERT_EQ(run_command(zinc_binary() + " bench -m " + data_path("models/stories260K.gguf") +
                            " -p 20 -n 4 -d 17 -r 1 --backend vulkan --profile 2>&1",
                        &out),
            0)
      << out;
  EXPECT_NE(out.find("| op | calls | total us | % of step |"), std::string::npos) << out;
  EXPECT_NE(out.find("| attention | 5 |"), std::string::npos) << out;
  EXPECT_NE(out.find("| vulkan |"), std::string::npos) << out;
}

}  // namespace
}  // namespace zinc::test
