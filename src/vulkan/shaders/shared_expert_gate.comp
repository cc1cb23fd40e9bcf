#version 450
// out[t] (+)= sigmoid(gate . x[t]) * shared[t] (src/cpu/ops/shared_expert_gate.cc); one
// workgroup per token. flags bit 0: overwrite out instead of adding.
#extension GL_EXT_control_flow_attributes : enable
layout(local_size_x_id = 0) in;
layout(constant_id = 0) const uint kGroupSize = 256;
layout(constant_id = 1) const uint kMinSubgroupSize = 1;
#include "reduce.glsl"

layout(std430, binding = 0) readonly buffer X { float x[]; };
layout(std430, binding = 1) readonly buffer G { float gate[]; };
layout(std430, binding = 2) readonly buffer S { float shared_out[]; };
layout(std430, binding = 3) buffer Out { float y[]; };

layout(push_constant) uniform Push {
  uint n;  // x width
  uint m;  // shared/out width
  uint x_stride;
  uint stride;  // shared and out
  uint flags;
} p;

const uint kMaxPerThread = 8;  // outputs held in registers; the rest in a second pass

void main() {
  const uint t = gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x;
  const uint tid = gl_LocalInvocationID.x;
  const bool overwrite = (p.flags & 1u) != 0u;
  // Every load is issued before the first store (which may alias them).
  float sv[kMaxPerThread], yv[kMaxPerThread];
  [[unroll]] for (uint j = 0; j < kMaxPerThread; ++j) {
    const uint i = tid + j * kGroupSize, o = t * p.stride + i;
    sv[j] = i < p.m ? shared_out[o] : 0.0;
    yv[j] = i < p.m && !overwrite ? y[o] : 0.0;
  }
  float d = 0.0;
  for (uint i = tid; i < p.n; i += kGroupSize) d += gate[i] * x[t * p.x_stride + i];
  const float g = 1.0 / (1.0 + exp(-workgroup_sum(d)));
  [[unroll]] for (uint j = 0; j < kMaxPerThread; ++j) {
    const uint i = tid + j * kGroupSize;
    if (i < p.m) y[t * p.stride + i] = yv[j] + sv[j] * g;
  }
  for (uint i = tid + kMaxPerThread * kGroupSize; i < p.m; i += kGroupSize) {
    const uint o = t * p.stride + i;
    const float v = shared_out[o] * g;
    y[o] = overwrite ? v : y[o] + v;
  }
}
