#version 450
// Per group of `group` elements of each token: out = rmsnorm(in; weight, eps) * silu(gate)
// (src/cpu/ops/gated_rms_norm.cc). One workgroup per (token, group).
layout(local_size_x_id = 0) in;
layout(constant_id = 0) const uint kGroupSize = 256;
layout(constant_id = 1) const uint kMinSubgroupSize = 1;
#include "reduce.glsl"

layout(std430, binding = 0) readonly buffer In { float x[]; };
layout(std430, binding = 1) readonly buffer Gate { float gate[]; };
layout(std430, binding = 2) readonly buffer W { float w[]; };
layout(std430, binding = 3) writeonly buffer Out { float y[]; };

layout(push_constant) uniform Push {
  uint group;
  uint groups;  // per token
  uint stride;  // floats between tokens, for in, gate and out
  float eps;
} p;

void main() {
  const uint id = gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x;
  const uint base = (id / p.groups) * p.stride + (id % p.groups) * p.group;
  const uint tid = gl_LocalInvocationID.x;
  float ss = 0.0;
  for (uint c = tid; c < p.group; c += kGroupSize) ss += x[base + c] * x[base + c];
  const float scale = inversesqrt(workgroup_sum(ss) / float(p.group) + p.eps);
  for (uint c = tid; c < p.group; c += kGroupSize) {
    const float g = gate[base + c];
    y[base + c] = ((x[base + c] * scale) * w[c]) * (g / (1.0 + exp(-g)));
  }
}
