// --backend vulkan through the zinc binary (on lavapipe in CI): the hybrid MoE against the CPU,
// bench --profile (greedy stories260K on Vulkan: run_test.cc).
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

// The hybrid MoE (delta-net layers, gated attention, routed and shared experts) runs on Vulkan
// with the CPU's greedy tokens.
TEST(VulkanBackend, HybridMoeGivesTheCpuTokens) {
  ZINC_REQUIRE_TEST_DATA();
  REQUIRE_VULKAN();
  const std::string cmd =
      zinc_binary() + " run -m " + data_path("models/qwen35moe-f32.gguf") + " --tokens 1,2,3,4,5,6,7,8,9,10 -n 6 --backend ";
  std::string cpu, vk;
  ASSERT_EQ(run_command(cmd + "cpu 2>/dev/null", &cpu), 0) << cpu;
  ASSERT_EQ(run_command(cmd + "vulkan 2>/dev/null", &vk), 0) << vk;
  EXPECT_FALSE(cpu.empty());
  EXPECT_EQ(vk, cpu);
}

TEST(VulkanBackend, BenchProfilesPrefillAndDecode) {
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
  EXPECT_NE(out.find("prefill step of 20 tokens at depth 17"), std::string::npos) << out;
  EXPECT_NE(out.find("decode step at depth 17"), std::string::npos) << out;
  EXPECT_NE(out.find("| matrix product | calls |"), std::string::npos) << out;
  EXPECT_NE(out.find("| ffn_down | 5 |"), std::string::npos) << out;
  // The decode step as it runs: stories260K's 5 layers of 6 stages (its RoPE and KV store are a
  // dispatch: heads of 8 are too small for the matvec epilogue), the embedding, output norm, head.
  EXPECT_NE(out.find("decode step at depth 17 as it runs: 33 stages"), std::string::npos) << out;
  EXPECT_NE(out.find("| attn_q+attn_k+attn_v | 5 |"), std::string::npos) << out;
  EXPECT_NE(out.find("| vulkan |"), std::string::npos) << out;
}

// A hybrid MoE layer's shared expert: its gate/up runs beside the routed gate/up and its down
// projection and gate inside the routed down, and both profiles name them there.
TEST(VulkanBackend, BenchProfileNamesTheSharedExpertWhereItRuns) {
  ZINC_REQUIRE_TEST_DATA();
  REQUIRE_VULKAN();
  std::string out;
  ASSERT_EQ(run_command(zinc_binary() + " bench -m " + data_path("models/qwen35moe-q4_k_m.gguf") +
                            " -p 0 -n 2 -r 1 --backend vulkan --profile 2>&1",
                        &out),
            0)
      << out;
  const size_t stages = out.find("as it runs");
  ASSERT_NE(stages, std::string::npos) << out;
  const std::string ops = out.substr(0, stages), staged = out.substr(stages);
  EXPECT_NE(ops.find("| ffn_gate_up_shexp | 4 |"), std::string::npos) << out;
  EXPECT_NE(ops.find("| ffn_down_exps | 4 |"), std::string::npos) << out;
  EXPECT_NE(staged.find("| ffn_gate_up_exps+ffn_gate_up_shexp | 4 |"), std::string::npos) << out;
  EXPECT_NE(staged.find("| ffn_down_exps | 4 |"), std::string::npos) << out;
}

}  // namespace
}  // namespace zinc::test
