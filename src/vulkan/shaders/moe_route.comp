#version 450
// MoE router, one workgroup per token: p = softmax(logits[t]) over n_expert, the k largest p
// (ties: lower id first) into ids[t][j] (int32) and weights[t][j], renormalised to sum 1 when
// flags bit 0 (dividing by max(sum, 2^-14)), exactly as src/cpu/ops/moe_route.cc.
#extension GL_EXT_control_flow_attributes : enable
layout(local_size_x_id = 0) in;
layout(constant_id = 0) const uint kGroupSize = 256;
layout(constant_id = 1) const uint kMinSubgroupSize = 1;
#include "reduce.glsl"

const uint kMaxPerThread = 8;  // n_expert <= 8 * kGroupSize
const uint kMaxK = 64;
shared float s_weight[kMaxK];
shared float s_p[kMaxPerThread * kGroupSize];

layout(std430, binding = 0) readonly buffer L { float logits[]; };
layout(std430, binding = 1) writeonly buffer I { int ids[]; };
layout(std430, binding = 2) writeonly buffer W { float weights[]; };

layout(push_constant) uniform Push {
  uint n_expert;
  uint k;
  uint stride;  // floats between tokens' logits
  uint flags;   // bit 0: renormalise
} p;

void main() {
  const uint t = gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x;
  const uint tid = gl_LocalInvocationID.x;
  const uint base = t * p.stride;
  float v[kMaxPerThread];
  float m = -1.0 / 0.0;
  [[unroll]] for (uint i = 0; i < kMaxPerThread; ++i) {
    const uint e = tid + i * kGroupSize;
    v[i] = e < p.n_expert ? logits[base + e] : -1.0 / 0.0;
    m = max(m, v[i]);
  }
  uint unused = 0;
  workgroup_argmax(m, unused);
  float s = 0.0;
  [[unroll]] for (uint i = 0; i < kMaxPerThread; ++i) {
    v[i] = tid + i * kGroupSize < p.n_expert ? exp(v[i] - m) : -1.0;
    s += max(v[i], 0.0);
  }
  const float inv = 1.0 / workgroup_sum(s);
  [[unroll]] for (uint i = 0; i < kMaxPerThread; ++i) v[i] *= inv;  // unused slots stay negative

  // Each expert's rank among all (higher p first, ties: lower id first); ranks below k are chosen.
  [[unroll]] for (uint i = 0; i < kMaxPerThread; ++i) {
    const uint e = tid + i * kGroupSize;
    if (e < p.n_expert) s_p[e] = v[i];
  }
  barrier();
  [[unroll]] for (uint i = 0; i < kMaxPerThread; ++i) {
    const uint e = tid + i * kGroupSize;
    if (e < p.n_expert) {
      uint rank = 0;
      for (uint j = 0; j < p.n_expert; ++j) {
        const float o = s_p[j];
        rank += (o > v[i] || (o == v[i] && j < e)) ? 1u : 0u;
      }
      if (rank < p.k) {
        ids[t * p.k + rank] = int(e);
        s_weight[rank] = v[i];
      }
    }
  }
  barrier();
  if (tid < p.k) {
    float chosen = 0.0;
    for (uint j = 0; j < p.k; ++j) chosen += s_weight[j];
    const float denom = (p.flags & 1u) != 0u ? max(chosen, 6.103515625e-5) : 1.0;
    weights[t * p.k + tid] = s_weight[tid] / denom;
  }
}
