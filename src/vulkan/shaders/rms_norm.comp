#version 450
#extension GL_EXT_control_flow_attributes : enable
// y[t] = x'[t] / sqrt(mean(x'[t]^2) + eps) * w, one workgroup per token, where x' = x, or with
// a residual x' = x + residual, also written to residual_out (which may be the residual itself).
layout(local_size_x_id = 0) in;
layout(constant_id = 0) const uint kGroupSize = 256;
layout(constant_id = 1) const uint kMinSubgroupSize = 1;
#include "reduce.glsl"

layout(std430, binding = 0) readonly buffer X { float x[]; };
layout(std430, binding = 1) readonly buffer R { float res[]; };
layout(std430, binding = 2) readonly buffer W { float w[]; };
layout(std430, binding = 3) writeonly buffer Y { float y[]; };
layout(std430, binding = 4) buffer RO { float res_out[]; };
layout(std430, binding = 0) readonly buffer X4 { vec4 x4[]; };
layout(std430, binding = 1) readonly buffer R4 { vec4 res4[]; };
layout(std430, binding = 2) readonly buffer W4 { vec4 w4[]; };
layout(std430, binding = 3) writeonly buffer Y4 { vec4 y4[]; };
layout(std430, binding = 4) buffer RO4 { vec4 res_out4[]; };

layout(push_constant) uniform Push {
  uint cols;
  uint x_stride;  // floats between tokens, for x, y, residual and residual_out alike
  float eps;
  uint flags;     // bit 0: add the residual
} p;

// Rows of up to 4 * kMaxVec * kGroupSize floats are held in registers: every load is issued
// before the first store (which may alias them), so a row costs one memory round trip.
const uint kMaxVec = 8;

void main() {
  const uint t = gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x;
  const uint tid = gl_LocalInvocationID.x;
  const uint base = t * p.x_stride;
  const bool add = (p.flags & 1u) != 0u;
  if (p.cols % 4 == 0 && p.x_stride % 4 == 0 && p.cols <= 4 * kMaxVec * kGroupSize) {
    const uint n4 = p.cols / 4, b4 = base / 4;
    vec4 v[kMaxVec];
    float ss4 = 0.0;
    [[unroll]] for (uint i = 0; i < kMaxVec; ++i) {
      const uint k = tid + i * kGroupSize;
      v[i] = vec4(0.0);
      if (k < n4) {
        v[i] = x4[b4 + k];
        if (add) v[i] += res4[b4 + k];
        ss4 += dot(v[i], v[i]);
      }
    }
    const float scale4 = inversesqrt(workgroup_sum(ss4) / float(p.cols) + p.eps);
    [[unroll]] for (uint i = 0; i < kMaxVec; ++i) {
      const uint k = tid + i * kGroupSize;
      if (k < n4) {
        if (add) res_out4[b4 + k] = v[i];
        y4[b4 + k] = v[i] * scale4 * w4[k];
      }
    }
    return;
  }
  float ss = 0.0;
  for (uint k = tid; k < p.cols; k += kGroupSize) {
    float v = x[base + k];
    if (add) {
      v += res[base + k];
      res_out[base + k] = v;
    }
    ss += v * v;
  }
  const float scale = inversesqrt(workgroup_sum(ss) / float(p.cols) + p.eps);
  for (uint k = tid; k < p.cols; k += kGroupSize) {
    const float v = add ? res_out[base + k] : x[base + k];  // this thread wrote res_out[base + k]
    y[base + k] = v * scale * w[k];
  }
}
