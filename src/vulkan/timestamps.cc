#include "vulkan/timestamps.h"

namespace zinc::vulkan {

Result<std::unique_ptr<TimestampPool>> TimestampPool::create(const Device& device, uint32_t count) {
  if (!device.caps().timestamps) return error("%s has no timestamps on its compute queue", device.caps().name.c_str());
  std::unique_ptr<TimestampPool> t(new TimestampPool(device));
  VkQueryPoolCreateInfo ci{VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO};
  ci.queryType = VK_QUERY_TYPE_TIMESTAMP;
  ci.queryCount = count;
  ZINC_RETURN_IF_ERROR(
      vk_check(device.api().vkCreateQueryPool(device.handle(), &ci, nullptr, &t->pool_), "vkCreateQueryPool"));
  t->count_ = count;
  return t;
}

TimestampPool::~TimestampPool() {
  if (pool_) device_.api().vkDestroyQueryPool(device_.handle(), pool_, nullptr);
}

Result<double> TimestampPool::elapsed_ns(uint32_t begin, uint32_t end) const {
  if (begin >= count_ || end >= count_) return error("timestamp query %u or %u out of %u", begin, end, count_);
  uint64_t t0 = 0, t1 = 0;
  const VkQueryResultFlags flags = VK_QUERY_RESULT_64_BIT | VK_QUERY_RESULT_WAIT_BIT;
  ZINC_RETURN_IF_ERROR(vk_check(
      device_.api().vkGetQueryPoolResults(device_.handle(), pool_, begin, 1, 8, &t0, 8, flags), "vkGetQueryPoolResults"));
  ZINC_RETURN_IF_ERROR(vk_check(
      device_.api().vkGetQueryPoolResults(device_.handle(), pool_, end, 1, 8, &t1, 8, flags), "vkGetQueryPoolResults"));
  return double(t1 - t0) * double(device_.caps().timestamp_period_ns);
}

}  // namespace zinc::vulkan
