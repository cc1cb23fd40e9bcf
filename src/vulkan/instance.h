// A Vulkan instance and what zinc learns of each physical device (DeviceCaps), probed once.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "vulkan/loader.h"

namespace zinc::vulkan {

struct DeviceCaps {
  VkPhysicalDevice physical = VK_NULL_HANDLE;
  int index = 0;
  std::string name;
  std::string type;          // "discrete", "integrated", "virtual", "cpu", "other"
  std::string driver;        // driver name and info, e.g. "NVIDIA 550.54"
  uint32_t api_version = 0;  // VK_MAKE_API_VERSION
  uint32_t vendor_id = 0;
  uint64_t device_local_bytes = 0;  // sum of device-local heaps
  uint32_t subgroup_size = 0;
  uint32_t min_subgroup_size = 0, max_subgroup_size = 0;  // from subgroup size control, else = subgroup_size
  bool subgroup_arithmetic = false;
  bool subgroup_shuffle = false;  // the staged decode matvec's cooperative staging
  bool fp16 = false;         // shaderFloat16 + 16-bit storage
  bool int8 = false;         // shaderInt8 + 8-bit storage
  bool int8_dot = false;     // VK_KHR_shader_integer_dot_product
  bool coopmat_nv = false;   // VK_NV_cooperative_matrix
  bool coopmat_khr = false;  // VK_KHR_cooperative_matrix
  bool coopmat_nv_f16 = false;  // NV cooperative matrix 16x16x16, f16 inputs, f32 accumulator
  bool shader_clock = false;  // VK_KHR_shader_clock, both clocks: the phase benchmark's kernels
  // VK_KHR_pipeline_executable_properties, used only with ZINC_PIPELINE_STATS set: every
  // pipeline's compiler statistics (registers, spills...) go to stderr as it is made.
  bool pipeline_stats = false;
  // VK_EXT_pipeline_robustness: pipelines ask for no bounds checks on storage and uniform
  // buffers (which NVIDIA's driver otherwise adds to every access). ZINC_ROBUST_BUFFERS=1 keeps
  // the driver's default.
  bool unchecked_buffers = false;
  uint64_t max_storage_buffer_range = 0;
  uint64_t max_allocation_bytes = 0;
  uint64_t min_storage_offset_alignment = 0;  // binding offsets must be multiples of this
  uint32_t max_compute_shared_bytes = 0;
  uint32_t max_workgroup_invocations = 0;
  // Multiprocessors: NVIDIA SMs (VK_NV_shader_sm_builtins) or AMD compute units
  // (VK_AMD_shader_core_properties(2)); 0 where the driver does not say. How many workgroups a
  // dispatch can keep resident at once depends on it.
  uint32_t compute_units = 0;
  bool timestamps = false;
  float timestamp_period_ns = 0;
  uint32_t compute_queue_family = UINT32_MAX;
  std::vector<std::string> extensions;

  bool has_extension(const std::string& name) const;
  std::string api_version_string() const;
};

class Instance {
 public:
  // Loads libvulkan, creates an instance (Vulkan 1.2+) and probes every device.
  static Result<std::unique_ptr<Instance>> create();
  ~Instance();
  Instance(const Instance&) = delete;
  Instance& operator=(const Instance&) = delete;

  const Api& api() const { return loader_->api(); }
  VkInstance handle() const { return instance_; }
  const std::vector<DeviceCaps>& devices() const { return devices_; }
  // The default device: the discrete GPU with the most memory, else the first with compute.
  int default_device() const;

 private:
  Instance() = default;
  std::unique_ptr<Loader> loader_;
  VkInstance instance_ = VK_NULL_HANDLE;
  std::vector<DeviceCaps> devices_;
};

}  // namespace zinc::vulkan
