#version 450
// out[t] = the index of the largest of x[t][0..cols) (the first on ties; NaN never wins).
// Workgroup (s, t) (or t alone, with one slice) takes columns [s, s + 1) * slice_cols of row t,
// each thread kUnroll of them loaded at once. With one slice it writes out[t]; with several, each
// writes its (value, index) record to `partials`, counts itself in counters[t], and the last to
// finish merges the records, writes out[t] and leaves the counter at zero.
#extension GL_EXT_control_flow_attributes : enable
layout(local_size_x_id = 0) in;
layout(constant_id = 0) const uint kGroupSize = 256;
layout(constant_id = 1) const uint kMinSubgroupSize = 1;
#include "reduce.glsl"

layout(std430, binding = 0) readonly buffer X { float x[]; };
layout(std430, binding = 1) writeonly buffer O { uint result[]; };
layout(std430, binding = 2) coherent buffer C { uint counters[]; };
layout(std430, binding = 3) coherent buffer P { uvec2 partials[]; };  // value bits, index
layout(push_constant) uniform Push {
  uint cols;
  uint x_stride;
  uint n_slices;
  uint slice_cols;
} p;

const uint kUnroll = 8;
const uint kNone = 0xFFFFFFFFu;
shared bool s_last;

// Takes (v, k) if it beats (best, index): larger, or the first value that is not NaN.
void take(float v, uint k, inout float best, inout uint index) {
  if (v > best || (index == kNone && !isnan(v))) {
    best = v;
    index = k;
  }
}

void main() {
  // One slice: rows over the grid's x then y (any number of rows); else x slices, y rows.
  const bool one = p.n_slices == 1;
  const uint slice = one ? 0 : gl_WorkGroupID.x;
  const uint t = one ? gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x : gl_WorkGroupID.y;
  const uint tid = gl_LocalInvocationID.x;
  const uint begin = slice * p.slice_cols, end = min(p.cols, begin + p.slice_cols);
  float best = -1.0 / 0.0;
  uint index = kNone;
  for (uint k0 = begin + tid; k0 < end; k0 += kUnroll * kGroupSize) {
    float v[kUnroll];
    [[unroll]] for (uint u = 0; u < kUnroll; ++u) v[u] = x[t * p.x_stride + min(k0 + u * kGroupSize, end - 1)];
    [[unroll]] for (uint u = 0; u < kUnroll; ++u)
      if (k0 + u * kGroupSize < end) take(v[u], k0 + u * kGroupSize, best, index);
  }
  workgroup_argmax(best, index);
  if (one) {
    if (tid == 0) result[t] = index == kNone ? 0u : index;
    return;
  }
  if (tid == 0) partials[t * p.n_slices + slice] = uvec2(floatBitsToUint(best), index);
  memoryBarrierBuffer();
  barrier();
  if (tid == 0) s_last = atomicAdd(counters[t], 1u) == p.n_slices - 1u;
  barrier();
  if (!s_last) return;
  memoryBarrierBuffer();
  best = -1.0 / 0.0;
  index = kNone;
  for (uint s = tid; s < p.n_slices; s += kGroupSize) {  // slices in order: their indices ascend
    const uvec2 r = partials[t * p.n_slices + s];
    if (r.y != kNone && (index == kNone || uintBitsToFloat(r.x) > best)) {
      best = uintBitsToFloat(r.x);
      index = r.y;
    }
  }
  workgroup_argmax(best, index);
  if (tid == 0) {
    result[t] = index == kNone ? 0u : index;
    counters[t] = 0u;
  }
}
