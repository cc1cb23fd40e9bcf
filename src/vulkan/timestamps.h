// GPU timestamps: a query pool whose entries Commands::write_timestamp fills, read back as
// nanoseconds once the submission has finished. Borrows the Device.
#pragma once

#include <memory>

#include "vulkan/device.h"

namespace zinc::vulkan {

class TimestampPool {
 public:
  // Errors: the device's compute queue has no timestamps (caps().timestamps false).
  static Result<std::unique_ptr<TimestampPool>> create(const Device& device, uint32_t count);
  ~TimestampPool();
  TimestampPool(const TimestampPool&) = delete;
  TimestampPool& operator=(const TimestampPool&) = delete;

  VkQueryPool handle() const { return pool_; }
  uint32_t count() const { return count_; }
  // Nanoseconds from query `begin` to query `end` (both written by a finished submission).
  Result<double> elapsed_ns(uint32_t begin, uint32_t end) const;

 private:
  explicit TimestampPool(const Device& d) : device_(d) {}
  const Device& device_;
  VkQueryPool pool_ = VK_NULL_HANDLE;
  uint32_t count_ = 0;
};

}  // namespace zinc::vulkan
