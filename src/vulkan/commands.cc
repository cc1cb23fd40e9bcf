#include "vulkan/commands.h"

#include "core/check.h"

namespace zinc::vulkan {

Result<std::unique_ptr<Commands>> Commands::create(const Device& device) {
  const Api& api = device.api();
  std::unique_ptr<Commands> c(new Commands(device));
  VkCommandPoolCreateInfo pci{VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO};
  pci.flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT;
  pci.queueFamilyIndex = device.caps().compute_queue_family;
  ZINC_RETURN_IF_ERROR(vk_check(api.vkCreateCommandPool(device.handle(), &pci, nullptr, &c->pool_), "vkCreateCommandPool"));
  VkCommandBufferAllocateInfo ai{VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO};
  ai.commandPool = c->pool_;
  ai.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
  ai.commandBufferCount = 1;
  ZINC_RETURN_IF_ERROR(vk_check(api.vkAllocateCommandBuffers(device.handle(), &ai, &c->cmd_), "vkAllocateCommandBuffers"));
  VkFenceCreateInfo fci{VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
  ZINC_RETURN_IF_ERROR(vk_check(api.vkCreateFence(device.handle(), &fci, nullptr, &c->fence_), "vkCreateFence"));
  return c;
}

Commands::~Commands() {
  const Api& api = device_.api();
  if (fence_) api.vkDestroyFence(device_.handle(), fence_, nullptr);
  if (pool_) api.vkDestroyCommandPool(device_.handle(), pool_, nullptr);
}

Status Commands::begin() {
  VkCommandBufferBeginInfo bi{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
  device_.api().vkResetCommandBuffer(cmd_, 0);
  for (const auto& p : set_pools_) p->reset();
  pools_used_ = 0;
  return vk_check(device_.api().vkBeginCommandBuffer(cmd_, &bi), "vkBeginCommandBuffer");
}

void Commands::dispatch(const Pipeline& pipeline, VkDescriptorSet set, const void* push, uint32_t push_bytes,
                        uint32_t gx, uint32_t gy, uint32_t gz) {
  const Api& api = device_.api();
  api.vkCmdBindPipeline(cmd_, VK_PIPELINE_BIND_POINT_COMPUTE, pipeline.handle());
  api.vkCmdBindDescriptorSets(cmd_, VK_PIPELINE_BIND_POINT_COMPUTE, pipeline.layout(), 0, 1, &set, 0, nullptr);
  if (push_bytes) api.vkCmdPushConstants(cmd_, pipeline.layout(), VK_SHADER_STAGE_COMPUTE_BIT, 0, push_bytes, push);
  api.vkCmdDispatch(cmd_, gx, gy, gz);
}

void Commands::dispatch(const Pipeline& pipeline, std::span<const BufferRange> buffers, const void* push,
                        uint32_t push_bytes, uint32_t gx, uint32_t gy, uint32_t gz) {
  if (pools_used_ == 0 || set_pools_[pools_used_ - 1]->full()) {
    if (pools_used_ == set_pools_.size()) {
      auto pool = DescriptorPool::create(device_, kSetsPerPool, kSetsPerPool * DescriptorPool::kMaxBuffers);
      ZINC_CHECK(pool.ok());
      set_pools_.push_back(std::move(*pool));
    }
    ++pools_used_;
  }
  Result<VkDescriptorSet> set = set_pools_[pools_used_ - 1]->allocate(pipeline, buffers);
  ZINC_CHECK(set.ok());
  dispatch(pipeline, *set, push, push_bytes, gx, gy, gz);
}

void Commands::reset_queries(VkQueryPool pool, uint32_t first, uint32_t count) {
  device_.api().vkCmdResetQueryPool(cmd_, pool, first, count);
}

void Commands::write_timestamp(VkQueryPool pool, uint32_t query) {
  device_.api().vkCmdWriteTimestamp(cmd_, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, pool, query);
}

void Commands::barrier() {
  VkMemoryBarrier mb{VK_STRUCTURE_TYPE_MEMORY_BARRIER};
  mb.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT;
  mb.dstAccessMask = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_READ_BIT |
                     VK_ACCESS_TRANSFER_WRITE_BIT | VK_ACCESS_HOST_READ_BIT;
  const VkPipelineStageFlags stages = VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT;
  device_.api().vkCmdPipelineBarrier(cmd_, stages, stages | VK_PIPELINE_STAGE_HOST_BIT, 0, 1, &mb, 0, nullptr, 0,
                                     nullptr);
}

void Commands::compute_barrier() {
  VkMemoryBarrier mb{VK_STRUCTURE_TYPE_MEMORY_BARRIER};
  mb.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT;
  mb.dstAccessMask = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT;
  device_.api().vkCmdPipelineBarrier(cmd_, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, 0,
                                     1, &mb, 0, nullptr, 0, nullptr);
}

void Commands::copy(const Buffer& src, uint64_t src_offset, const Buffer& dst, uint64_t dst_offset,
                    uint64_t size_bytes) {
  VkBufferCopy region{src_offset, dst_offset, size_bytes};
  device_.api().vkCmdCopyBuffer(cmd_, src.handle(), dst.handle(), 1, &region);
}

void Commands::zero(const Buffer& dst, uint64_t offset, uint64_t size_bytes) {
  device_.api().vkCmdFillBuffer(cmd_, dst.handle(), offset, size_bytes, 0);
}

Status Commands::end() { return vk_check(device_.api().vkEndCommandBuffer(cmd_), "vkEndCommandBuffer"); }

Status Commands::submit_and_wait() {
  ZINC_RETURN_IF_ERROR(submit());
  return wait();
}

Status Commands::submit() {
  const Api& api = device_.api();
  VkSubmitInfo si{VK_STRUCTURE_TYPE_SUBMIT_INFO};
  si.commandBufferCount = 1;
  si.pCommandBuffers = &cmd_;
  ZINC_RETURN_IF_ERROR(vk_check(api.vkResetFences(device_.handle(), 1, &fence_), "vkResetFences"));
  return vk_check(api.vkQueueSubmit(device_.queue(), 1, &si, fence_), "vkQueueSubmit");
}

Status Commands::wait() {
  return vk_check(device_.api().vkWaitForFences(device_.handle(), 1, &fence_, VK_TRUE, UINT64_MAX),
                  "vkWaitForFences");
}

}  // namespace zinc::vulkan
