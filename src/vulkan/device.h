// A logical Vulkan device with one compute queue, created for one probed physical device.
// Owns the VkDevice; every other Vulkan object in zinc borrows it and must die first.
#pragma once

#include <memory>

#include "vulkan/instance.h"

namespace zinc::vulkan {

class Device {
 public:
  // Enables what the device offers of: fp16 + 16-bit storage, int8 + 8-bit storage,
  // subgroup size control, and the cooperative-matrix extensions.
  static Result<std::unique_ptr<Device>> create(const Instance& instance, int device_index);
  ~Device();
  Device(const Device&) = delete;
  Device& operator=(const Device&) = delete;

  const Api& api() const { return api_; }
  VkDevice handle() const { return device_; }
  VkQueue queue() const { return queue_; }
  const DeviceCaps& caps() const { return caps_; }
  // Memory type index with all of `required` flags (preferring `preferred` too), or -1.
  int memory_type(uint32_t type_bits, VkMemoryPropertyFlags required, VkMemoryPropertyFlags preferred) const;

 private:
  Device() = default;
  Api api_;
  DeviceCaps caps_;
  VkDevice device_ = VK_NULL_HANDLE;
  VkQueue queue_ = VK_NULL_HANDLE;
  VkPhysicalDeviceMemoryProperties memory_{};
};

// "vkX failed: VK_ERROR_..." as a Status.
Status vk_check(VkResult r, const char* what);

}  // namespace zinc::vulkan
