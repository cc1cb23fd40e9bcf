#version 450
// In place, per head: x = x / sqrt(mean(x^2) + eps) * w[0..head_dim), one workgroup per
// (head, row): x = head, y = row.
layout(local_size_x_id = 0) in;
layout(constant_id = 0) const uint kGroupSize = 256;
layout(constant_id = 1) const uint kMinSubgroupSize = 1;
#include "reduce.glsl"

layout(std430, binding = 0) buffer X { float x[]; };
layout(std430, binding = 1) readonly buffer W { float w[]; };

layout(push_constant) uniform Push {
  uint stride;  // floats per row
  uint head_dim, head_stride, offset;
  float eps;
} p;

void main() {
  const uint base = gl_WorkGroupID.y * p.stride + p.offset + gl_WorkGroupID.x * p.head_stride;
  const uint tid = gl_LocalInvocationID.x;
  float ss = 0.0;
  for (uint k = tid; k < p.head_dim; k += kGroupSize) ss += x[base + k] * x[base + k];
  const float scale = inversesqrt(workgroup_sum(ss) / float(p.head_dim) + p.eps);
  for (uint k = tid; k < p.head_dim; k += kGroupSize) x[base + k] = (x[base + k] * scale) * w[k];
}
