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

}  // namespace
}  // namespace zinc::vulkan
