// A storage buffer with its own memory: device-local (weights, activations) or host-visible
// (staging, readback). Borrows the Device. Sizes are limited by the device's
// max_storage_buffer_range and max_allocation_bytes; callers split larger data.
#pragma once

#include <memory>

#include "vulkan/device.h"

namespace zinc::vulkan {

enum class MemoryKind { kDeviceLocal, kHostVisible };

class Buffer {
 public:
  static Result<std::unique_ptr<Buffer>> create(const Device& device, uint64_t size_bytes, MemoryKind kind);
  ~Buffer();
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;

  VkBuffer handle() const { return buffer_; }
  uint64_t size_bytes() const { return size_bytes_; }
  // Host pointer of a host-visible buffer (persistently mapped, coherent), else nullptr.
  void* mapped() const { return mapped_; }

 private:
  Buffer(const Device& d) : device_(d) {}
  const Device& device_;
  VkBuffer buffer_ = VK_NULL_HANDLE;
  VkDeviceMemory memory_ = VK_NULL_HANDLE;
  uint64_t size_bytes_ = 0;
  void* mapped_ = nullptr;
};

}  // namespace zinc::vulkan
