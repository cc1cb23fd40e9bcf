#version 450
// Measurement only (bench/vulkan_read_bench.cc): how fast one dispatch can stream a region of
// device memory, the floor under a decode matvec of that many weight bytes. Each invocation
// requests kLoads 16-byte words at a time and folds them into one value that is stored only when
// it equals p.magic (never, but the compiler cannot know). kChunked: each workgroup reads one
// contiguous slice, as a matvec's rows; otherwise the whole grid strides over the region.
#extension GL_EXT_control_flow_attributes : enable

layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint kLoads = 4;
layout(constant_id = 2) const bool kChunked = false;

layout(std430, binding = 0) readonly buffer W { uvec4 w[]; };
layout(std430, binding = 1) writeonly buffer O { uint o[]; };

layout(push_constant) uniform Push {
  uint base, words, magic;
} p;

void main() {
  uint begin = 0, end = p.words, first = gl_GlobalInvocationID.x, stride = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
  if (kChunked) {
    const uint per = (p.words + gl_NumWorkGroups.x - 1) / gl_NumWorkGroups.x;
    begin = gl_WorkGroupID.x * per;
    end = min(p.words, begin + per);
    first = begin + gl_LocalInvocationID.x;
    stride = gl_WorkGroupSize.x;
  }
  uvec4 acc = uvec4(0u);
  for (uint i = first; i < end; i += stride * kLoads) {
    uvec4 v[kLoads];
    [[unroll]] for (uint j = 0; j < kLoads; ++j) {
      const uint k = i + j * stride;
      v[j] = k < end ? w[p.base + k] : uvec4(0u);
    }
    [[unroll]] for (uint j = 0; j < kLoads; ++j) acc ^= v[j];
  }
  if (acc.x + acc.y + acc.z + acc.w == p.magic) o[gl_GlobalInvocationID.x] = acc.x;
}
