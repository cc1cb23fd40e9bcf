#version 450
// Per group of `group` elements of each token: out = rmsnorm(in; weight, eps) * silu(gate)
// (src/cpu/ops/gated_rms_norm.cc). One workgroup per (token, group); with PER_SUBGROUP one
// subgroup per (token, group), its lanes striding over the group (no barrier).
layout(local_size_x_id = 0) in;
layout(constant_id = 0) const uint kGroupSize = 256;
layout(constant_id = 1) const uint kMinSubgroupSize = 1;
#ifdef PER_SUBGROUP
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_arithmetic : require
#else
#include "reduce.glsl"
#endif

layout(std430, binding = 0) readonly buffer In { float x[]; };
layout(std430, binding = 1) readonly buffer Gate { float gate[]; };
layout(std430, binding = 2) readonly buffer W { float w[]; };
layout(std430, binding = 3) writeonly buffer Out { float y[]; };

layout(push_constant) uniform Push {
  uint group;
  uint groups;  // per token
  uint stride;  // floats between tokens, for in, gate and out
  float eps;
  uint total;   // groups of all tokens
} p;

void main() {
#ifdef PER_SUBGROUP
  const uint id = (gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x) * gl_NumSubgroups + gl_SubgroupID;
  if (id >= p.total) return;
  const uint tid = gl_SubgroupInvocationID, step = gl_SubgroupSize;
#else
  const uint id = gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x;
  const uint tid = gl_LocalInvocationID.x, step = kGroupSize;
#endif
  const uint base = (id / p.groups) * p.stride + (id % p.groups) * p.group;
  float ss = 0.0;
  for (uint c = tid; c < p.group; c += step) ss += x[base + c] * x[base + c];
#ifdef PER_SUBGROUP
  const float scale = inversesqrt(subgroupAdd(ss) / float(p.group) + p.eps);
#else
  const float scale = inversesqrt(workgroup_sum(ss) / float(p.group) + p.eps);
#endif
  for (uint c = tid; c < p.group; c += step) {
    const float g = gate[base + c];
    y[base + c] = ((x[base + c] * scale) * w[c]) * (g / (1.0 + exp(-g)));
  }
}
