#version 450
// Adds up the K splits of a GEMM (gemm.comp / gemm_coopmat.comp with split_groups): for every
// token t and row r < rows, y[t * y_stride + y_offset + r] = sum over splits z of
// part[(z * n_tokens + t) * part_stride + r] (plus the residual at the same place, flags bit 0),
// the splits added in order.
layout(local_size_x = 256) in;

layout(std430, binding = 0) readonly buffer Part { float part[]; };
layout(std430, binding = 1) buffer Y { float y[]; };
layout(std430, binding = 2) readonly buffer R { float residual[]; };

layout(push_constant) uniform Push {
  uint rows, n_tokens, splits, part_stride, y_stride, y_offset, flags, pad;
} p;

void main() {
  const uint i = gl_GlobalInvocationID.x + gl_GlobalInvocationID.y * gl_NumWorkGroups.x * 256;
  if (i >= p.rows * p.n_tokens) return;
  const uint t = i / p.rows, r = i % p.rows;
  float v = 0.0;
  for (uint z = 0; z < p.splits; ++z) v += part[(z * p.n_tokens + t) * p.part_stride + r];
  const uint dst = t * p.y_stride + p.y_offset + r;
  if ((p.flags & 1u) != 0u) v += residual[dst];
  y[dst] = v;
}
