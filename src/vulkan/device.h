// A logical Vulkan device with one compute queue, created for one probed physical device.
// Owns the VkDevice; every other Vulkan object in zinc borrows it and must die first.
#pragma once

#include <memory>
#include <string>

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
  // The pipeline cache every pipeline of this device uses: loaded from and saved (at
  // destruction) to $XDG_CACHE_HOME/zinc (else ~/.cache/zinc); a file that cannot be read or
  // written only costs compile time.
  VkPipelineCache pipeline_cache() const { return pipeline_cache_; }
  // Memory type index with all of `required` flags (preferring `preferred` too), or -1.
  int memory_type(uint32_t type_bits, VkMemoryPropertyFlags required, VkMemoryPropertyFlags preferred) const;

 private:
  Device() = default;
  void open_pipeline_cache();
  void save_pipeline_cache() const;
  Api api_;
  DeviceCaps caps_;
  VkDevice device_ = VK_NULL_HANDLE;
  VkQueue queue_ = VK_NULL_HANDLE;
  VkPipelineCache pipeline_cache_ = VK_NULL_HANDLE;
  std::string pipeline_cache_path_;
  VkPhysicalDeviceMemoryProperties memory_{};
};

// "vkX failed: VK_ERROR_..." as a Status.
Status vk_check(VkResult r, const char* what);

}  // namespace zinc::vulkan
