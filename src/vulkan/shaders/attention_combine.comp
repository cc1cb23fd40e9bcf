#version 450
// Merges the split partials of attention.comp: per (query head, token) workgroup,
// out = sum_s exp(m_s - M) acc_s / sum_s exp(m_s - M) l_s (times sigmoid(gate) with flags bit 0).
// A split's record: m, l, two unused floats, then acc (dv floats; 16-byte aligned for dv % 4 == 0).
layout(local_size_x = 128) in;

layout(std430, binding = 0) readonly buffer Part { float part[]; };
layout(std430, binding = 1) readonly buffer Gate { float gate[]; };
layout(std430, binding = 2) writeonly buffer Out { float out_[]; };

layout(push_constant) uniform Push {
  uint n_q_heads, dv, n_splits, flags;
  uint out_stride, g_stride, g_head_stride, g_offset;
} p;

void main() {
  const uint h = gl_WorkGroupID.x, t = gl_WorkGroupID.y;
  const uint rec0 = (t * p.n_q_heads + h) * p.n_splits * (p.dv + 4);
  float mx = -1.0 / 0.0;
  for (uint s = 0; s < p.n_splits; ++s) mx = max(mx, part[rec0 + s * (p.dv + 4)]);
  float total = 0.0;
  for (uint s = 0; s < p.n_splits; ++s) {
    const uint r = rec0 + s * (p.dv + 4);
    total += part[r + 1] * exp(part[r] - mx);
  }
  const float inv = 1.0 / total;
  const bool gated = (p.flags & 1u) != 0u;
  for (uint d = gl_LocalInvocationID.x; d < p.dv; d += 128) {
    float a = 0.0;
    for (uint s = 0; s < p.n_splits; ++s) {
      const uint r = rec0 + s * (p.dv + 4);
      a += part[r + 4 + d] * exp(part[r] - mx);
    }
    const float gv = gated ? 1.0 / (1.0 + exp(-gate[t * p.g_stride + p.g_offset + h * p.g_head_stride + d])) : 1.0;
    out_[t * p.out_stride + h * p.dv + d] = a * inv * gv;
  }
}
