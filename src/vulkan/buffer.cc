#include "vulkan/buffer.h"

namespace zinc::vulkan {

Result<std::unique_ptr<Buffer>> Buffer::create(const Device& device, uint64_t size_bytes, MemoryKind kind) {
  const auto& caps = device.caps();
  if (size_bytes == 0) size_bytes = 4;
  if (size_bytes > caps.max_allocation_bytes)
    return error("buffer of %llu bytes exceeds the device's allocation limit of %llu bytes",
                 (unsigned long long)size_bytes, (unsigned long long)caps.max_allocation_bytes);
  const Api& api = device.api();
  std::unique_ptr<Buffer> b(new Buffer(device));
  b->size_bytes_ = size_bytes;
  VkBufferCreateInfo bci{VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO};
  bci.size = size_bytes;
  bci.usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_TRANSFER_SRC_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT;
  bci.sharingMode = VK_SHARING_MODE_EXCLUSIVE;
  ZINC_RETURN_IF_ERROR(vk_check(api.vkCreateBuffer(device.handle(), &bci, nullptr, &b->buffer_), "vkCreateBuffer"));
  VkMemoryRequirements req{};
  api.vkGetBufferMemoryRequirements(device.handle(), b->buffer_, &req);
  int type = -1;
  if (kind == MemoryKind::kDeviceLocal) {
    type = device.memory_type(req.memoryTypeBits, VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT, 0);
  } else {
    type = device.memory_type(req.memoryTypeBits,
                              VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT,
                              VK_MEMORY_PROPERTY_HOST_CACHED_BIT);
  }
  if (type < 0) return error("no suitable Vulkan memory type for a buffer of %llu bytes", (unsigned long long)size_bytes);
  VkMemoryAllocateInfo mai{VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO};
  mai.allocationSize = req.size;
  mai.memoryTypeIndex = uint32_t(type);
  VkResult r = api.vkAllocateMemory(device.handle(), &mai, nullptr, &b->memory_);
  if (r != VK_SUCCESS)
    return error("cannot allocate %llu bytes of %s GPU memory: %s", (unsigned long long)req.size,
                 kind == MemoryKind::kDeviceLocal ? "device-local" : "host-visible", result_name(r));
  ZINC_RETURN_IF_ERROR(vk_check(api.vkBindBufferMemory(device.handle(), b->buffer_, b->memory_, 0), "vkBindBufferMemory"));
  if (kind == MemoryKind::kHostVisible)
    ZINC_RETURN_IF_ERROR(vk_check(api.vkMapMemory(device.handle(), b->memory_, 0, VK_WHOLE_SIZE, 0, &b->mapped_),
                                  "vkMapMemory"));
  return b;
}

Buffer::~Buffer() {
  const Api& api = device_.api();
  if (mapped_) api.vkUnmapMemory(device_.handle(), memory_);
  if (buffer_) api.vkDestroyBuffer(device_.handle(), buffer_, nullptr);
  if (memory_) api.vkFreeMemory(device_.handle(), memory_, nullptr);
}

}  // namespace zinc::vulkan
