#include "vulkan/ops/op_util.h"

#include <cctype>

namespace zinc::vulkan::ops {

std::string shader_type_suffix(TensorType t) {
  std::string s(type_name(t));
  for (char& c : s) c = char(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

Result<std::unique_ptr<Pipeline>> make_pipeline(const Device& device, const std::string& shader, uint32_t n_buffers,
                                                uint32_t push_bytes, std::vector<uint32_t> spec_constants) {
  PipelineDesc desc;
  desc.shader = shader;
  desc.n_buffers = n_buffers;
  desc.push_constant_bytes = push_bytes;
  desc.spec_constants = std::move(spec_constants);
  return Pipeline::create(device, desc, device.pipeline_cache());
}

Reduction reduction_for(const DeviceCaps& caps, bool use_subgroups) {
  Reduction r;
  r.group_size = caps.max_workgroup_invocations >= 256 ? 256 : 64;
  if (use_subgroups && caps.subgroup_arithmetic) {
    r.suffix = "_sg";
    r.min_subgroup_size = caps.min_subgroup_size ? caps.min_subgroup_size : 1;
  }
  return r;
}

Grid grid_for(uint32_t n_groups) {
  Grid g;
  g.x = n_groups < 65535 ? (n_groups ? n_groups : 1) : 65535;
  g.y = (n_groups + g.x - 1) / g.x;
  if (g.y == 0) g.y = 1;
  return g;
}

bool int8_capable(TensorType t) {
  switch (t) {
    case TensorType::Q4_0: case TensorType::Q4_1: case TensorType::Q5_0: case TensorType::Q5_1:
    case TensorType::Q8_0: case TensorType::Q2_K: case TensorType::Q3_K: case TensorType::Q4_K:
    case TensorType::Q5_K: case TensorType::Q6_K:
      return true;
    default:
      return false;
  }
}

}  // namespace zinc::vulkan::ops
