#version 450
// Causal GQA attention over the paged device KV pool (flash-attention style: tiles of 128 keys,
// online softmax). One workgroup per (kv head x query sub-group, token, split): it serves up to
// kMaxG query heads that share the KV head, over its split of the token's keys 0..pos (splits
// are max(min_chunk, ceil((pos + 1) / n_splits)) keys long, rounded up to whole tiles beyond one
// tile, so the recorded dispatch fits every position). flags bit 1: write partial results (m, l,
// unnormalised acc) for attention_combine; else the normalised output (times sigmoid(gate) with
// flags bit 0).
#extension GL_EXT_control_flow_attributes : enable
layout(local_size_x = 128) in;
const uint kThreads = 128;
const uint kMaxG = 8;
const uint kMaxDim = 256;
#ifdef KV_F32
const uint kPer = 1;
#else
const uint kPer = 2;
#endif

layout(std430, binding = 0) readonly buffer Q { float q[]; };
layout(std430, binding = 1) readonly buffer Step { int step[]; };
layout(std430, binding = 2) readonly buffer KC { uint kc[]; };
layout(std430, binding = 3) readonly buffer VC { uint vc[]; };
layout(std430, binding = 4) writeonly buffer Out { float out_[]; };
layout(std430, binding = 5) readonly buffer Gate { float gate[]; };

layout(push_constant) uniform Push {
  uint q_stride, q_head_stride, q_offset, n_q_heads;
  uint dk, dv, n_kv_heads, group;
  uint g_stride, g_head_stride, g_offset, flags;
  uint out_stride;
  float scale;
  uint n_splits, min_chunk;
  uint pos_offset, seq_offset, pages_offset, max_pages;
} p;

shared float sq[kMaxG * kMaxDim];
shared float sp[kMaxG * kThreads];
shared float sred[kMaxG * kThreads];

uint kv_row(int seq, uint key) {
  return uint(step[p.pages_offset + uint(seq) * p.max_pages + key / 16]) * 16 + key % 16;
}

void reduce_tile(bool is_max) {
  for (uint st = kThreads / 2; st > 0; st >>= 1) {
    if (gl_LocalInvocationID.x < st)
      [[unroll]] for (uint g = 0; g < kMaxG; ++g) {
        const uint i = g * kThreads + gl_LocalInvocationID.x;
        sred[i] = is_max ? max(sred[i], sred[i + st]) : sred[i] + sred[i + st];
      }
    barrier();
  }
}

void main() {
  const uint n_qsub = (p.group + kMaxG - 1) / kMaxG;
  const uint kvh = gl_WorkGroupID.x / n_qsub, qsub = gl_WorkGroupID.x % n_qsub;
  const uint t = gl_WorkGroupID.y, split = gl_WorkGroupID.z;
  const uint h0 = kvh * p.group + qsub * kMaxG;
  const uint ng = min(kMaxG, p.group - qsub * kMaxG);
  const uint tid = gl_LocalInvocationID.x;
  const int pos = step[p.pos_offset + t], seq = step[p.seq_offset + t];
  const uint n_keys = uint(pos) + 1;
  // Chunks longer than a tile are whole tiles (fewer, fuller workgroups; the splits still cover all keys).
  uint chunk = max(p.min_chunk, (n_keys + p.n_splits - 1) / p.n_splits);
  if (chunk > kThreads) chunk = (chunk + kThreads - 1) / kThreads * kThreads;
  const uint begin = split * chunk, end = min(n_keys, begin + chunk);
  const bool partial = (p.flags & 2u) != 0u;

  for (uint i = tid; i < ng * p.dk; i += kThreads) {
    const uint g = i / p.dk, d = i % p.dk;
    sq[g * kMaxDim + d] = q[t * p.q_stride + p.q_offset + (h0 + g) * p.q_head_stride + d];
  }
  barrier();

  const uint k_words = p.n_kv_heads * p.dk / kPer, v_words = p.n_kv_heads * p.dv / kPer;
  // This thread's two output dims: (2 tid, 2 tid + 1) for f16 words, (tid, tid + 128) for f32.
  const uint d0 = kPer == 2 ? 2 * tid : tid, d1 = kPer == 2 ? 2 * tid + 1 : tid + kThreads;
  float m[kMaxG], l[kMaxG];
  vec2 acc[kMaxG];
  [[unroll]] for (uint g = 0; g < kMaxG; ++g) {
    m[g] = -1.0 / 0.0;
    l[g] = 0.0;
    acc[g] = vec2(0.0);
  }
  for (uint base = begin; base < end; base += kThreads) {
    const uint key = base + tid;
    float s[kMaxG];
    [[unroll]] for (uint g = 0; g < kMaxG; ++g) s[g] = 0.0;
    if (key < end) {
      const uint k0 = kv_row(seq, key) * k_words + kvh * p.dk / kPer;
      for (uint w = 0; w < p.dk / kPer; ++w) {
#ifdef KV_F32
        const float kx = uintBitsToFloat(kc[k0 + w]);
        [[unroll]] for (uint g = 0; g < kMaxG; ++g)
          if (g < ng) s[g] += sq[g * kMaxDim + w] * kx;
#else
        const vec2 kk = unpackHalf2x16(kc[k0 + w]);
        [[unroll]] for (uint g = 0; g < kMaxG; ++g)
          if (g < ng) {
            s[g] += sq[g * kMaxDim + 2 * w] * kk.x;
            s[g] += sq[g * kMaxDim + 2 * w + 1] * kk.y;
          }
#endif
      }
      [[unroll]] for (uint g = 0; g < kMaxG; ++g) s[g] *= p.scale;
    } else {
      [[unroll]] for (uint g = 0; g < kMaxG; ++g) s[g] = -1.0 / 0.0;
    }
    [[unroll]] for (uint g = 0; g < kMaxG; ++g) sred[g * kThreads + tid] = s[g];
    barrier();
    reduce_tile(true);
    [[unroll]] for (uint g = 0; g < kMaxG; ++g) {
      const float mn = max(m[g], sred[g * kThreads]);
      const float c = exp(m[g] - mn);  // 0 on the first tile
      l[g] *= c;
      acc[g] *= c;
      m[g] = mn;
      const float pr = key < end ? exp(s[g] - mn) : 0.0;
      l[g] += pr;
      sp[g * kThreads + tid] = pr;
    }
    barrier();
    const uint nk = min(kThreads, end - base);
    if (d0 < p.dv) {
      for (uint j = 0; j < nk; ++j) {
        const uint v0 = kv_row(seq, base + j) * v_words + kvh * p.dv / kPer;
#ifdef KV_F32
        const vec2 vv = vec2(uintBitsToFloat(vc[v0 + d0]), d1 < p.dv ? uintBitsToFloat(vc[v0 + d1]) : 0.0);
#else
        const vec2 vv = unpackHalf2x16(vc[v0 + tid]);
#endif
        [[unroll]] for (uint g = 0; g < kMaxG; ++g) acc[g] += sp[g * kThreads + j] * vv;
      }
    }
    barrier();
  }

  [[unroll]] for (uint g = 0; g < kMaxG; ++g) sred[g * kThreads + tid] = l[g];
  barrier();
  reduce_tile(false);
  for (uint g = 0; g < ng; ++g) {
    const uint h = h0 + g;
    const float total = sred[g * kThreads];
    if (partial) {
      const uint rec = ((t * p.n_q_heads + h) * p.n_splits + split) * (p.dv + 4);
      if (tid == 0) {
        out_[rec] = begin < end ? m[g] : -1.0 / 0.0;
        out_[rec + 1] = begin < end ? total : 0.0;
      }
      if (d0 < p.dv) out_[rec + 4 + d0] = acc[g].x;
      if (d1 < p.dv) out_[rec + 4 + d1] = acc[g].y;
    } else {
      const float inv = 1.0 / total;
      const uint o = t * p.out_stride + h * p.dv;
      const uint gb = t * p.g_stride + p.g_offset + h * p.g_head_stride;
      const bool gated = (p.flags & 1u) != 0u;
      if (d0 < p.dv) out_[o + d0] = acc[g].x * inv * (gated ? 1.0 / (1.0 + exp(-gate[gb + d0])) : 1.0);
      if (d1 < p.dv) out_[o + d1] = acc[g].y * inv * (gated ? 1.0 / (1.0 + exp(-gate[gb + d1])) : 1.0);
    }
  }
}
