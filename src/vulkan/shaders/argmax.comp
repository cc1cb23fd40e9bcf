#version 450
// out[t] = the index of the largest of x[t][0..cols) (the first on ties), one workgroup per row.
layout(local_size_x_id = 0) in;
layout(constant_id = 0) const uint kGroupSize = 256;
layout(constant_id = 1) const uint kMinSubgroupSize = 1;
#include "reduce.glsl"

layout(std430, binding = 0) readonly buffer X { float x[]; };
layout(std430, binding = 1) writeonly buffer O { uint result[]; };
layout(push_constant) uniform Push {
  uint cols;
  uint x_stride;
} p;

void main() {
  const uint t = gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x;
  const uint tid = gl_LocalInvocationID.x;
  float best = -1.0 / 0.0;
  uint index = 0xFFFFFFFFu;
  for (uint k = tid; k < p.cols; k += kGroupSize) {
    const float v = x[t * p.x_stride + k];
    if (v > best || (index == 0xFFFFFFFFu && !isnan(v))) {
      best = v;
      index = k;
    }
  }
  workgroup_argmax(best, index);
  if (tid == 0) result[t] = index == 0xFFFFFFFFu ? 0u : index;
}
