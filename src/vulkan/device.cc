#include "vulkan/device.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <vector>

namespace zinc::vulkan {

Status vk_check(VkResult r, const char* what) {
  if (r == VK_SUCCESS) return Status();
  return error("%s failed: %s", what, result_name(r));
}

Result<std::unique_ptr<Device>> Device::create(const Instance& instance, int device_index) {
  if (device_index < 0 || size_t(device_index) >= instance.devices().size())
    return error("no Vulkan device %d (there are %zu)", device_index, instance.devices().size());
  std::unique_ptr<Device> d(new Device());
  d->api_ = instance.api();
  d->caps_ = instance.devices()[size_t(device_index)];
  const DeviceCaps& c = d->caps_;
  d->api_.vkGetPhysicalDeviceMemoryProperties(c.physical, &d->memory_);

  VkPhysicalDeviceVulkan12Features f12{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES};
  VkPhysicalDeviceVulkan11Features f11{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES, &f12};
  VkPhysicalDeviceFeatures2 have{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2, &f11};
  d->api_.vkGetPhysicalDeviceFeatures2(c.physical, &have);

  VkPhysicalDeviceVulkan12Features e12{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES};
  e12.shaderFloat16 = f12.shaderFloat16;
  e12.shaderInt8 = f12.shaderInt8;
  e12.storageBuffer8BitAccess = f12.storageBuffer8BitAccess;
  e12.uniformAndStorageBuffer8BitAccess = f12.uniformAndStorageBuffer8BitAccess;
  e12.storagePushConstant8 = f12.storagePushConstant8;
  e12.shaderSubgroupExtendedTypes = f12.shaderSubgroupExtendedTypes;
  e12.hostQueryReset = f12.hostQueryReset;
  e12.timelineSemaphore = f12.timelineSemaphore;
  e12.vulkanMemoryModel = f12.vulkanMemoryModel;
  e12.vulkanMemoryModelDeviceScope = f12.vulkanMemoryModelDeviceScope;
  VkPhysicalDeviceVulkan11Features e11{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES, &e12};
  e11.storageBuffer16BitAccess = f11.storageBuffer16BitAccess;
  e11.uniformAndStorageBuffer16BitAccess = f11.uniformAndStorageBuffer16BitAccess;
  e11.storagePushConstant16 = f11.storagePushConstant16;
  VkPhysicalDeviceFeatures2 enable{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2, &e11};
  enable.features.shaderInt16 = have.features.shaderInt16;
  enable.features.shaderInt64 = have.features.shaderInt64;

  std::vector<const char*> exts;
  // Puts a feature struct at the head of the chain `enable` passes to vkCreateDevice, with the
  // extension that brings it (none where it is core).
  auto chain = [&enable, &exts](auto& feature, const char* extension = nullptr) {
    if (extension) exts.push_back(extension);
    feature.pNext = enable.pNext;
    enable.pNext = &feature;
  };
  VkPhysicalDeviceSubgroupSizeControlFeatures size_control{
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_SIZE_CONTROL_FEATURES};
  if (c.has_extension("VK_EXT_subgroup_size_control") || c.api_version >= VK_API_VERSION_1_3) {
    size_control.subgroupSizeControl = VK_TRUE;
    size_control.computeFullSubgroups = VK_TRUE;
    chain(size_control, c.api_version < VK_API_VERSION_1_3 ? "VK_EXT_subgroup_size_control" : nullptr);
  }
  VkPhysicalDeviceCooperativeMatrixFeaturesNV coop_nv{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_FEATURES_NV};
  if (c.coopmat_nv) {
    coop_nv.cooperativeMatrix = VK_TRUE;
    chain(coop_nv, "VK_NV_cooperative_matrix");
  }
  VkPhysicalDeviceShaderIntegerDotProductFeatures dot{
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_INTEGER_DOT_PRODUCT_FEATURES};
  if (c.int8_dot) {
    dot.shaderIntegerDotProduct = VK_TRUE;
    chain(dot, c.api_version < VK_API_VERSION_1_3 ? "VK_KHR_shader_integer_dot_product" : nullptr);
  }
  VkPhysicalDevicePipelineRobustnessFeaturesEXT robustness{
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PIPELINE_ROBUSTNESS_FEATURES_EXT};
  if (c.unchecked_buffers) {
    robustness.pipelineRobustness = VK_TRUE;
    chain(robustness, "VK_EXT_pipeline_robustness");
  }
  VkPhysicalDeviceShaderClockFeaturesKHR clock{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_CLOCK_FEATURES_KHR};
  if (c.shader_clock) {
    clock.shaderSubgroupClock = VK_TRUE;
    clock.shaderDeviceClock = VK_TRUE;
    chain(clock, "VK_KHR_shader_clock");
  }
  VkPhysicalDevicePipelineExecutablePropertiesFeaturesKHR exec_props{
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PIPELINE_EXECUTABLE_PROPERTIES_FEATURES_KHR};
  if (c.pipeline_stats) {
    exec_props.pipelineExecutableInfo = VK_TRUE;
    chain(exec_props, "VK_KHR_pipeline_executable_properties");
  }

  const float priority = 1.0f;
  VkDeviceQueueCreateInfo qci{VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO};
  qci.queueFamilyIndex = c.compute_queue_family;
  qci.queueCount = 1;
  qci.pQueuePriorities = &priority;
  VkDeviceCreateInfo ci{VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO, &enable};
  ci.queueCreateInfoCount = 1;
  ci.pQueueCreateInfos = &qci;
  ci.enabledExtensionCount = uint32_t(exts.size());
  ci.ppEnabledExtensionNames = exts.data();
  ZINC_RETURN_IF_ERROR(vk_check(d->api_.vkCreateDevice(c.physical, &ci, nullptr, &d->device_), "vkCreateDevice"));
  d->api_.load_device(d->device_);
  d->api_.vkGetDeviceQueue(d->device_, c.compute_queue_family, 0, &d->queue_);
  d->open_pipeline_cache();
  return d;
}

void Device::open_pipeline_cache() {
  std::string dir;
  if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x)
    dir = std::string(x) + "/zinc";
  else if (const char* h = std::getenv("HOME"); h && *h)
    dir = std::string(h) + "/.cache/zinc";
  std::vector<char> data;
  if (!dir.empty()) {
    char name[64];
    std::snprintf(name, sizeof name, "/pipelines-%04x-%08x.bin", caps_.vendor_id,
                  uint32_t(std::hash<std::string>()(caps_.name + caps_.driver)));
    pipeline_cache_path_ = dir + name;
    if (std::FILE* f = std::fopen(pipeline_cache_path_.c_str(), "rb")) {
      char buf[1 << 16];
      for (size_t n; (n = std::fread(buf, 1, sizeof buf, f)) > 0;) data.insert(data.end(), buf, buf + n);
      std::fclose(f);
    }
  }
  VkPipelineCacheCreateInfo ci{VK_STRUCTURE_TYPE_PIPELINE_CACHE_CREATE_INFO};
  ci.initialDataSize = data.size();
  ci.pInitialData = data.empty() ? nullptr : data.data();
  if (api_.vkCreatePipelineCache(device_, &ci, nullptr, &pipeline_cache_) != VK_SUCCESS) {
    ci.initialDataSize = 0;
    ci.pInitialData = nullptr;
    if (api_.vkCreatePipelineCache(device_, &ci, nullptr, &pipeline_cache_) != VK_SUCCESS) pipeline_cache_ = VK_NULL_HANDLE;
  }
}

void Device::save_pipeline_cache() const {
  if (!pipeline_cache_ || pipeline_cache_path_.empty()) return;
  size_t size = 0;
  if (api_.vkGetPipelineCacheData(device_, pipeline_cache_, &size, nullptr) != VK_SUCCESS || size == 0) return;
  std::vector<char> data(size);
  if (api_.vkGetPipelineCacheData(device_, pipeline_cache_, &size, data.data()) != VK_SUCCESS) return;
  std::error_code ec;
  std::filesystem::create_directories(std::filesystem::path(pipeline_cache_path_).parent_path(), ec);
  const std::string tmp = pipeline_cache_path_ + ".tmp" + std::to_string(::getpid());
  std::FILE* f = std::fopen(tmp.c_str(), "wb");
  if (!f) return;
  const bool ok = std::fwrite(data.data(), 1, size, f) == size;
  if (std::fclose(f) == 0 && ok)
    std::filesystem::rename(tmp, pipeline_cache_path_, ec);
  else
    std::filesystem::remove(tmp, ec);
}

Device::~Device() {
  if (pipeline_cache_) {
    save_pipeline_cache();
    api_.vkDestroyPipelineCache(device_, pipeline_cache_, nullptr);
  }
  if (device_) {
    api_.vkDeviceWaitIdle(device_);
    api_.vkDestroyDevice(device_, nullptr);
  }
}

int Device::memory_type(uint32_t type_bits, VkMemoryPropertyFlags required, VkMemoryPropertyFlags preferred) const {
  int fallback = -1;
  for (uint32_t i = 0; i < memory_.memoryTypeCount; ++i) {
    if (!(type_bits & (1u << i))) continue;
    const VkMemoryPropertyFlags f = memory_.memoryTypes[i].propertyFlags;
    if ((f & required) != required) continue;
    if ((f & preferred) == preferred) return int(i);
    if (fallback < 0) fallback = int(i);
  }
  return fallback;
}

}  // namespace zinc::vulkan
