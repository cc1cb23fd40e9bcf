#version 450
// Merges the split partials of attention.comp: per (query head, token) workgroup,
// out = sum_s exp(m_s - M) acc_s / sum_s exp(m_s - M) l_s (times sigmoid(gate) with flags bit 0).
layout(local_size_x = 128) in;

layout(std430, binding = 0) readonly buffer Part { float part[]; };
layout(std430, binding = 1) readonly buffer Gate { float gate[]; };
layout(std430, binding = 2) writeonly buffer Out { float out_[]; };

layout(push_constant) uniform Push {
  uint n_q_heads, dv, n_splits, flags;
  uint out_stride, g_stride, g_head_stride, g_offset;
} p;

const uint kMaxSplits = 64;
shared float s_m[kMaxSplits];  // each split's maximum
shared float s_w[kMaxSplits];  // its sum, then its weight exp(m_s - M)
shared float s_inv;

void main() {
  const uint h = gl_WorkGroupID.x, t = gl_WorkGroupID.y, tid = gl_LocalInvocationID.x;
  const uint rec0 = (t * p.n_q_heads + h) * p.n_splits * (p.dv + 2);
  // One split per thread: the maxima and sums load in parallel.
  if (tid < p.n_splits) {
    s_m[tid] = part[rec0 + tid * (p.dv + 2)];
    s_w[tid] = part[rec0 + tid * (p.dv + 2) + 1];
  }
  barrier();
  if (tid == 0) {
    float mx = -1.0 / 0.0;
    for (uint s = 0; s < p.n_splits; ++s) mx = max(mx, s_m[s]);
    float total = 0.0;
    for (uint s = 0; s < p.n_splits; ++s) {
      const float w = exp(s_m[s] - mx);
      total += s_w[s] * w;
      s_w[s] = w;
    }
    s_inv = 1.0 / total;
  }
  barrier();
  const float inv = s_inv;
  const bool gated = (p.flags & 1u) != 0u;
  for (uint d = tid; d < p.dv; d += 128) {
    float a = 0.0;
    uint s = 0;
    for (; s + 4 <= p.n_splits; s += 4) {
      const uint r = rec0 + s * (p.dv + 2) + 2 + d, st = p.dv + 2;
      const float a0 = part[r], a1 = part[r + st], a2 = part[r + 2 * st], a3 = part[r + 3 * st];
      a += a0 * s_w[s] + a1 * s_w[s + 1] + a2 * s_w[s + 2] + a3 * s_w[s + 3];
    }
    for (; s < p.n_splits; ++s) a += part[rec0 + s * (p.dv + 2) + 2 + d] * s_w[s];
    const float gv = gated ? 1.0 / (1.0 + exp(-gate[t * p.g_stride + p.g_offset + h * p.g_head_stride + d])) : 1.0;
    out_[t * p.out_stride + h * p.dv + d] = a * inv * gv;
  }
}
