#version 450
// out[t][r] (+)= sum_j weights[t * k + j] * expert_out[t * k + j][r], in slot order (as
// src/cpu/ops/moe_matmul.cc). One thread per output element. flags bit 0: add to out.
layout(local_size_x = 256) in;
layout(std430, binding = 0) readonly buffer E { float expert_out[]; };
layout(std430, binding = 1) readonly buffer W { float weights[]; };
layout(std430, binding = 2) buffer Out { float y[]; };

layout(push_constant) uniform Push {
  uint rows;
  uint n_tokens;
  uint k;
  uint in_stride;
  uint out_stride;
  uint flags;
} p;

void main() {
  const uint i = gl_GlobalInvocationID.y * gl_NumWorkGroups.x * 256 + gl_GlobalInvocationID.x;
  if (i >= p.rows * p.n_tokens) return;
  const uint t = i / p.rows, r = i % p.rows;
  float o = 0.0;
  for (uint j = 0; j < p.k; ++j) {
    const uint s = t * p.k + j;
    o = j == 0 ? expert_out[s * p.in_stride + r] * weights[s] : o + expert_out[s * p.in_stride + r] * weights[s];
  }
  const uint dst = t * p.out_stride + r;
  y[dst] = (p.flags & 1u) != 0u ? y[dst] + o : o;
}
