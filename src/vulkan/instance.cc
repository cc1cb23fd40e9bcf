#include "vulkan/instance.h"

#include <algorithm>
#include <cstdlib>
#include <string_view>

namespace zinc::vulkan {
namespace {

const char* device_type_name(VkPhysicalDeviceType t) {
  switch (t) {
    case VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU: return "discrete";
    case VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU: return "integrated";
    case VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU: return "virtual";
    case VK_PHYSICAL_DEVICE_TYPE_CPU: return "cpu";
    default: return "other";
  }
}

DeviceCaps probe(const Api& api, VkPhysicalDevice pd, int index) {
  DeviceCaps c;
  c.physical = pd;
  c.index = index;

  uint32_t n_ext = 0;
  api.vkEnumerateDeviceExtensionProperties(pd, nullptr, &n_ext, nullptr);
  std::vector<VkExtensionProperties> exts(n_ext);
  api.vkEnumerateDeviceExtensionProperties(pd, nullptr, &n_ext, exts.data());
  for (const auto& e : exts) c.extensions.emplace_back(e.extensionName);

  VkPhysicalDeviceDriverProperties driver{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_DRIVER_PROPERTIES};
  VkPhysicalDeviceSubgroupProperties subgroup{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_PROPERTIES, &driver};
  VkPhysicalDeviceSubgroupSizeControlProperties size_control{
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_SIZE_CONTROL_PROPERTIES, &subgroup};
  VkPhysicalDeviceShaderSMBuiltinsPropertiesNV sm{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_SM_BUILTINS_PROPERTIES_NV,
                                                  &size_control};
  VkPhysicalDeviceShaderCorePropertiesAMD amd{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_CORE_PROPERTIES_AMD,
                                              &size_control};
  VkPhysicalDeviceShaderCoreProperties2AMD amd2{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_CORE_PROPERTIES_2_AMD,
                                                &size_control};
  // Chained only where the device has the extension (unknown structures are not allowed).
  void* units = &size_control;
  if (c.has_extension("VK_NV_shader_sm_builtins")) {
    sm.pNext = units;
    units = &sm;
  }
  if (c.has_extension("VK_AMD_shader_core_properties")) {
    amd.pNext = units;
    units = &amd;
  }
  if (c.has_extension("VK_AMD_shader_core_properties2")) {
    amd2.pNext = units;
    units = &amd2;
  }
  VkPhysicalDeviceMaintenance3Properties maint3{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MAINTENANCE_3_PROPERTIES, units};
  VkPhysicalDeviceProperties2 props{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2, &maint3};
  api.vkGetPhysicalDeviceProperties2(pd, &props);
  const auto& p = props.properties;
  c.name = p.deviceName;
  c.type = device_type_name(p.deviceType);
  c.api_version = p.apiVersion;
  c.vendor_id = p.vendorID;
  c.driver = std::string(driver.driverName) + " " + driver.driverInfo;
  c.subgroup_size = subgroup.subgroupSize;
  c.subgroup_arithmetic = (subgroup.supportedOperations & VK_SUBGROUP_FEATURE_ARITHMETIC_BIT) != 0;
  c.subgroup_shuffle = (subgroup.supportedOperations & VK_SUBGROUP_FEATURE_SHUFFLE_BIT) != 0;
  c.min_subgroup_size = size_control.minSubgroupSize ? size_control.minSubgroupSize : c.subgroup_size;
  c.max_subgroup_size = size_control.maxSubgroupSize ? size_control.maxSubgroupSize : c.subgroup_size;
  c.max_storage_buffer_range = p.limits.maxStorageBufferRange;
  c.max_allocation_bytes = maint3.maxMemoryAllocationSize;
  c.min_storage_offset_alignment = p.limits.minStorageBufferOffsetAlignment;
  c.max_compute_shared_bytes = p.limits.maxComputeSharedMemorySize;
  c.max_workgroup_invocations = p.limits.maxComputeWorkGroupInvocations;
  c.timestamp_period_ns = p.limits.timestampPeriod;
  if (c.has_extension("VK_NV_shader_sm_builtins")) c.compute_units = sm.shaderSMCount;
  if (c.has_extension("VK_AMD_shader_core_properties"))
    c.compute_units = amd.shaderEngineCount * amd.shaderArraysPerEngineCount * amd.computeUnitsPerShaderArray;
  if (c.has_extension("VK_AMD_shader_core_properties2") && amd2.activeComputeUnitCount)
    c.compute_units = amd2.activeComputeUnitCount;

  VkPhysicalDeviceShaderIntegerDotProductFeatures dot{
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_INTEGER_DOT_PRODUCT_FEATURES};
  const bool dot_known = c.has_extension("VK_KHR_shader_integer_dot_product") || p.apiVersion >= VK_API_VERSION_1_3;
  VkPhysicalDeviceShaderClockFeaturesKHR clock{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_CLOCK_FEATURES_KHR};
  const bool clock_known = c.has_extension("VK_KHR_shader_clock");
  if (clock_known) dot.pNext = &clock;
  VkPhysicalDevicePipelineRobustnessFeaturesEXT robustness{
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PIPELINE_ROBUSTNESS_FEATURES_EXT, dot.pNext};
  const bool robustness_known = c.has_extension("VK_EXT_pipeline_robustness");
  if (robustness_known) dot.pNext = &robustness;
  VkPhysicalDeviceVulkan12Features f12{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES,
                                       dot_known ? static_cast<void*>(&dot) : clock_known ? &clock : nullptr};
  VkPhysicalDeviceVulkan11Features f11{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES, &f12};
  VkPhysicalDeviceFeatures2 f{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2, &f11};
  api.vkGetPhysicalDeviceFeatures2(pd, &f);
  c.fp16 = f12.shaderFloat16 && f11.storageBuffer16BitAccess;
  c.int8 = f12.shaderInt8 && f12.storageBuffer8BitAccess;
  c.int8_dot = dot_known && dot.shaderIntegerDotProduct;
  c.coopmat_nv = c.has_extension("VK_NV_cooperative_matrix");
  c.coopmat_khr = c.has_extension("VK_KHR_cooperative_matrix");
  c.shader_clock = clock_known && clock.shaderSubgroupClock && clock.shaderDeviceClock;
  const char* robust = std::getenv("ZINC_ROBUST_BUFFERS");
  c.unchecked_buffers = robustness_known && robustness.pipelineRobustness && !(robust && *robust && *robust != '0');
  const char* stats = std::getenv("ZINC_PIPELINE_STATS");
  c.pipeline_stats = stats && *stats && std::string_view(stats) != "0" &&
                     c.has_extension("VK_KHR_pipeline_executable_properties");
  if (c.coopmat_nv && api.vkGetPhysicalDeviceCooperativeMatrixPropertiesNV) {
    uint32_t n = 0;
    api.vkGetPhysicalDeviceCooperativeMatrixPropertiesNV(pd, &n, nullptr);
    std::vector<VkCooperativeMatrixPropertiesNV> props(n, {VK_STRUCTURE_TYPE_COOPERATIVE_MATRIX_PROPERTIES_NV});
    api.vkGetPhysicalDeviceCooperativeMatrixPropertiesNV(pd, &n, props.data());
    for (const auto& m : props)
      if (m.MSize == 16 && m.NSize == 16 && m.KSize == 16 && m.AType == VK_COMPONENT_TYPE_FLOAT16_NV &&
          m.BType == VK_COMPONENT_TYPE_FLOAT16_NV && m.CType == VK_COMPONENT_TYPE_FLOAT32_NV &&
          m.DType == VK_COMPONENT_TYPE_FLOAT32_NV && m.scope == VK_SCOPE_SUBGROUP_NV)
        c.coopmat_nv_f16 = c.fp16;
  }

  VkPhysicalDeviceMemoryProperties mem{};
  api.vkGetPhysicalDeviceMemoryProperties(pd, &mem);
  for (uint32_t i = 0; i < mem.memoryHeapCount; ++i)
    if (mem.memoryHeaps[i].flags & VK_MEMORY_HEAP_DEVICE_LOCAL_BIT) c.device_local_bytes += mem.memoryHeaps[i].size;

  uint32_t n_q = 0;
  api.vkGetPhysicalDeviceQueueFamilyProperties(pd, &n_q, nullptr);
  std::vector<VkQueueFamilyProperties> qs(n_q);
  api.vkGetPhysicalDeviceQueueFamilyProperties(pd, &n_q, qs.data());
  // Prefer a family with compute (graphics families also do compute).
  for (uint32_t i = 0; i < n_q; ++i)
    if (qs[i].queueFlags & VK_QUEUE_COMPUTE_BIT) {
      c.compute_queue_family = i;
      c.timestamps = qs[i].timestampValidBits > 0 && c.timestamp_period_ns > 0;
      break;
    }
  return c;
}

}  // namespace

bool DeviceCaps::has_extension(const std::string& name) const {
  return std::find(extensions.begin(), extensions.end(), name) != extensions.end();
}

std::string DeviceCaps::api_version_string() const {
  return std::to_string(VK_API_VERSION_MAJOR(api_version)) + "." + std::to_string(VK_API_VERSION_MINOR(api_version)) +
         "." + std::to_string(VK_API_VERSION_PATCH(api_version));
}

Result<std::unique_ptr<Instance>> Instance::create() {
  std::unique_ptr<Instance> inst(new Instance());
  ZINC_ASSIGN_OR_RETURN(inst->loader_, Loader::open());
  Api& api = inst->loader_->api();
  uint32_t version = VK_API_VERSION_1_0;
  if (api.vkEnumerateInstanceVersion) api.vkEnumerateInstanceVersion(&version);
  if (version < VK_API_VERSION_1_2) return error("the Vulkan loader supports only Vulkan 1.%u; zinc needs 1.2",
                                                 VK_API_VERSION_MINOR(version));
  VkApplicationInfo app{VK_STRUCTURE_TYPE_APPLICATION_INFO};
  app.pApplicationName = "zinc";
  app.pEngineName = "zinc";
  app.apiVersion = VK_API_VERSION_1_3 <= version ? VK_API_VERSION_1_3 : VK_API_VERSION_1_2;
  VkInstanceCreateInfo ci{VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO};
  ci.pApplicationInfo = &app;
  VkResult r = api.vkCreateInstance(&ci, nullptr, &inst->instance_);
  if (r != VK_SUCCESS) return error("vkCreateInstance failed: %s", result_name(r));
  api.load_instance(inst->instance_);

  uint32_t n = 0;
  api.vkEnumeratePhysicalDevices(inst->instance_, &n, nullptr);
  std::vector<VkPhysicalDevice> pds(n);
  api.vkEnumeratePhysicalDevices(inst->instance_, &n, pds.data());
  for (uint32_t i = 0; i < n; ++i) {
    DeviceCaps c = probe(api, pds[i], int(i));
    if (c.api_version >= VK_API_VERSION_1_2 && c.compute_queue_family != UINT32_MAX) {
      c.index = int(inst->devices_.size());
      inst->devices_.push_back(std::move(c));
    }
  }
  return inst;
}

Instance::~Instance() {
  if (instance_ && loader_) loader_->api().vkDestroyInstance(instance_, nullptr);
}

int Instance::default_device() const {
  int best = -1;
  for (const auto& d : devices_) {
    if (best < 0) {
      best = d.index;
      continue;
    }
    const auto& b = devices_[size_t(best)];
    const bool d_discrete = d.type == "discrete", b_discrete = b.type == "discrete";
    if (d_discrete != b_discrete ? d_discrete : d.device_local_bytes > b.device_local_bytes) best = d.index;
  }
  return best;
}

}  // namespace zinc::vulkan
