// Helpers shared by the ops: shader variant names and dispatch geometry.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "core/tensor_type.h"
#include "vulkan/commands.h"

namespace zinc::vulkan::ops {

// "q4_k", "f16", ...: the type part of shader variant names (shaders/shaders.cmake).
std::string shader_type_suffix(TensorType t);

// Weight types the matvec kernels can multiply with int8 dot products (8-bit activations).
bool int8_capable(TensorType t);

// Activations: `n_tokens` rows of floats at a stride (in floats) that is a multiple of 4, in a
// range whose offset meets the device's min_storage_offset_alignment.
struct Activations {
  BufferRange range;
  uint32_t stride = 0;
};

// Workgroup counts for n workgroups: x at most 65535, y as needed (shaders flatten x + y * nx).
struct Grid {
  uint32_t x = 1, y = 1;
};
Grid grid_for(uint32_t n_groups);

// A pipeline for an embedded shader, its buffers bound by Commands::dispatch.
Result<std::unique_ptr<Pipeline>> make_pipeline(const Device& device, const std::string& shader, uint32_t n_buffers,
                                                uint32_t push_bytes, std::vector<uint32_t> spec_constants);

// Workgroup size and shader suffix of the reductions in shaders/reduce.glsl: "_sg" variants use
// subgroup arithmetic where the device has it. Spec constants {group_size, min_subgroup_size}.
struct Reduction {
  std::string suffix;
  uint32_t group_size = 256, min_subgroup_size = 1;
};
Reduction reduction_for(const DeviceCaps& caps, bool use_subgroups);

// The whole buffer behind a range, for binding a weight chunk.
inline BufferRange whole(const Buffer& b) { return {&b, 0, VK_WHOLE_SIZE}; }

}  // namespace zinc::vulkan::ops
