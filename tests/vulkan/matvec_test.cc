#include <gtest/gtest.h>

#include <cstring>
#include <random>

#include "cpu/matmul.h"
#include "vulkan/commands.h"
#include "vulkan/shaders.h"

namespace zinc::vulkan {
namespace {

struct Push {
  uint32_t rows, cols, n_tokens;
};

// The F32 matrix-vector shader against the CPU matmul on random data, at sizes that are not
// multiples of the workgroup.
TEST(VulkanMatvec, F32MatchesCpu) {
  auto inst = Instance::create();
  ASSERT_TRUE(inst.ok()) << inst.status().message();
  auto dev = Device::create(**inst, (*inst)->default_device());
  ASSERT_TRUE(dev.ok()) << dev.status().message();
  const Device& d = **dev;

  const uint32_t rows = 77, cols = 131, n_tokens = 3;
  std::mt19937 rng(7);
  std::normal_distribution<float> nd;
  std::vector<float> w(rows * cols), x(n_tokens * cols), ref(n_tokens * rows);
  for (auto& v : w) v = nd(rng);
  for (auto& v : x) v = nd(rng);
  cpu::ThreadPool pool(1);
  cpu::matmul({TensorType::F32, w.data(), rows, cols, cols * 4}, x.data(), n_tokens, ref.data(), pool);

  auto bw = Buffer::create(d, w.size() * 4, MemoryKind::kHostVisible);
  auto bx = Buffer::create(d, x.size() * 4, MemoryKind::kHostVisible);
  auto by = Buffer::create(d, ref.size() * 4, MemoryKind::kHostVisible);
  ASSERT_TRUE(bw.ok() && bx.ok() && by.ok());
  std::memcpy((*bw)->mapped(), w.data(), w.size() * 4);
  std::memcpy((*bx)->mapped(), x.data(), x.size() * 4);

  auto pipe = Pipeline::create(d, {"matvec_f32", 3, sizeof(Push), {64}});
  ASSERT_TRUE(pipe.ok()) << pipe.status().message();
  auto pool_d = DescriptorPool::create(d, 4, 12);
  ASSERT_TRUE(pool_d.ok());
  auto set = (*pool_d)->allocate(**pipe, {{bw->get()}, {bx->get()}, {by->get()}});
  ASSERT_TRUE(set.ok()) << set.status().message();
  auto cmd = Commands::create(d);
  ASSERT_TRUE(cmd.ok());
  Push push{rows, cols, n_tokens};
  ASSERT_TRUE((*cmd)->begin().ok());
  (*cmd)->dispatch(**pipe, *set, &push, sizeof push, rows, n_tokens);
  (*cmd)->barrier();
  ASSERT_TRUE((*cmd)->end().ok());
  ASSERT_TRUE((*cmd)->submit_and_wait().ok());

  const float* y = static_cast<const float*>((*by)->mapped());
  for (size_t i = 0; i < ref.size(); ++i) EXPECT_NEAR(y[i], ref[i], 1e-3f * (1 + std::abs(ref[i]))) << i;
}

TEST(VulkanShaders, EveryEmbeddedShaderIsSpirv) {
  ASSERT_FALSE(all_shaders().empty());
  for (const auto& s : all_shaders()) {
    ASSERT_GT(s.spirv.size(), 5u) << s.name;
    EXPECT_EQ(s.spirv[0], 0x07230203u) << s.name;
  }
}

}  // namespace
}  // namespace zinc::vulkan
