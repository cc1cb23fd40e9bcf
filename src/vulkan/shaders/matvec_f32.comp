#version 450
// y[t][r] = sum_k W[r][k] * x[t][k]: one workgroup per (row, token), float32 weights.
// The reduction uses shared memory only, so it is correct for any subgroup size.
layout(local_size_x_id = 0) in;
layout(constant_id = 0) const uint kGroupSize = 64;

layout(std430, binding = 0) readonly buffer W { float w[]; };
layout(std430, binding = 1) readonly buffer X { float x[]; };
layout(std430, binding = 2) writeonly buffer Y { float y[]; };
layout(push_constant) uniform Push { uint rows; uint cols; uint n_tokens; } p;

shared float partial[kGroupSize];

void main() {
  const uint r = gl_WorkGroupID.x;
  const uint t = gl_WorkGroupID.y;
  const uint lane = gl_LocalInvocationID.x;
  float acc = 0.0;
  for (uint k = lane; k < p.cols; k += kGroupSize) acc += w[r * p.cols + k] * x[t * p.cols + k];
  partial[lane] = acc;
  barrier();
  for (uint s = kGroupSize / 2; s > 0; s >>= 1) {
    if (lane < s) partial[lane] += partial[lane + s];
    barrier();
  }
  if (lane == 0) y[t * p.rows + r] = partial[0];
}
