// Records compute work into one command buffer and submits it. A recording can be submitted
// many times (the static decode graph is recorded once and replayed per token). Borrows the Device.
#pragma once

#include <memory>
#include <span>
#include <vector>

#include "vulkan/pipeline.h"

namespace zinc::vulkan {

class Commands {
 public:
  static Result<std::unique_ptr<Commands>> create(const Device& device);
  ~Commands();
  Commands(const Commands&) = delete;
  Commands& operator=(const Commands&) = delete;

  Status begin();  // starts a new recording (the previous one must have finished)
  void dispatch(const Pipeline& pipeline, VkDescriptorSet set, const void* push, uint32_t push_bytes,
                uint32_t groups_x, uint32_t groups_y = 1, uint32_t groups_z = 1);
  // As above with buffers[i] bound at binding i through a descriptor set allocated and written
  // now, which lives until the next begin(). (Sets bound this way made the H200's Llama-3-8B
  // decode step 1 % faster than VK_KHR_push_descriptor.)
  void dispatch(const Pipeline& pipeline, std::span<const BufferRange> buffers, const void* push,
                uint32_t push_bytes, uint32_t groups_x, uint32_t groups_y = 1, uint32_t groups_z = 1);
  // Resets `count` queries from `first`, and writes a timestamp once all earlier work is done.
  void reset_queries(VkQueryPool pool, uint32_t first, uint32_t count);
  void write_timestamp(VkQueryPool pool, uint32_t query);
  // Makes earlier shader and transfer writes visible to later shader, transfer and host reads.
  void barrier();
  // Makes earlier shader writes visible to later shaders only: what dependent dispatches need.
  // Lighter than barrier() where the driver honours the narrower scope (the H200's decode step of
  // Llama-3-8B: 3.73 -> 3.49 ms of GPU time).
  void compute_barrier();
  void copy(const Buffer& src, uint64_t src_offset, const Buffer& dst, uint64_t dst_offset, uint64_t size_bytes);
  // Sets size_bytes (a multiple of 4) of dst from offset (a multiple of 4) to zero.
  void zero(const Buffer& dst, uint64_t offset, uint64_t size_bytes);
  Status end();
  // Submits the finished recording and waits for it.
  Status submit_and_wait();
  // submit_and_wait() in two halves: wait() blocks until the last submit() has run.
  Status submit();
  Status wait();

 private:
  explicit Commands(const Device& d) : device_(d) {}
  const Device& device_;
  VkCommandPool pool_ = VK_NULL_HANDLE;
  VkCommandBuffer cmd_ = VK_NULL_HANDLE;
  VkFence fence_ = VK_NULL_HANDLE;
  // The recording's descriptor sets: pools of kSetsPerPool, reused from the first at begin().
  static constexpr uint32_t kSetsPerPool = 1024;
  std::vector<std::unique_ptr<DescriptorPool>> set_pools_;
  size_t pools_used_ = 0;
};

}  // namespace zinc::vulkan
