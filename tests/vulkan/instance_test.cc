#include "vulkan/instance.h"

#include <gtest/gtest.h>

#include "support/test_data.h"

namespace zinc::vulkan {
namespace {

// make test installs mesa-vulkan-drivers, so lavapipe is always there to run shaders on.
TEST(VulkanInstance, FindsAComputeDevice) {
  auto inst = Instance::create();
  ASSERT_TRUE(inst.ok()) << inst.status().message();
  ASSERT_FALSE((*inst)->devices().empty());
  const int def = (*inst)->default_device();
  ASSERT_GE(def, 0);
  const DeviceCaps& d = (*inst)->devices()[size_t(def)];
  EXPECT_FALSE(d.name.empty());
  EXPECT_GT(d.subgroup_size, 0u);
  EXPECT_GE(d.max_storage_buffer_range, uint64_t(1) << 27);
  EXPECT_NE(d.compute_queue_family, UINT32_MAX);
}

// Multiprocessors are known exactly where a vendor extension reports them.
TEST(VulkanInstance, ComputeUnitsOnlyWhereTheDriverSays) {
  auto inst = Instance::create();
  ASSERT_TRUE(inst.ok()) << inst.status().message();
  for (const DeviceCaps& d : (*inst)->devices()) {
    const bool reported = d.has_extension("VK_NV_shader_sm_builtins") ||
                          d.has_extension("VK_AMD_shader_core_properties") ||
                          d.has_extension("VK_AMD_shader_core_properties2");
    if (reported)
      EXPECT_GT(d.compute_units, 0u) << d.name;
    else
      EXPECT_EQ(d.compute_units, 0u) << d.name;
  }
}

}  // namespace
}  // namespace zinc::vulkan
