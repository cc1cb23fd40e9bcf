#version 450
// Causal GQA attention for prefill batches, tiled over queries and keys: a workgroup takes
// p.hg query heads of one KV head for p.bq consecutive batch rows (R = hg * bq <= kMaxR query
// vectors, R * (dk + 4) <= kMaxR * 132) and walks their keys in tiles of kKT (online softmax;
// both specialization constants, sized to the device's shared memory), so each K/V tile read
// from the paged pool serves all R queries. Head dims are multiples of 8 (4 with KV_F32). Rows
// of the block that belong to different sequences are handled one sequence at a time (the
// others masked). Scores and values in float32; K/V tiles staged in shared memory as stored
// (f16 pairs, or f32 with KV_F32). Output as attention.comp without splits (times
// sigmoid(gate) with flags bit 0).
#extension GL_EXT_control_flow_attributes : enable
layout(local_size_x = 256) in;
layout(constant_id = 0) const uint kMaxR = 32;  // query vectors per workgroup: 16 or 32
layout(constant_id = 1) const uint kKT = 32;    // keys per tile: 8..32
#ifdef KV_F32
const uint kPer = 1;
#else
const uint kPer = 2;
#endif
const uint kMaxDim = 256;

layout(std430, binding = 0) readonly buffer Q { float q[]; };
layout(std430, binding = 1) readonly buffer Step { int step[]; };
layout(std430, binding = 2) readonly buffer KC { uvec4 kc[]; };
layout(std430, binding = 3) readonly buffer VC { uvec4 vc[]; };
layout(std430, binding = 4) writeonly buffer Out { float out_[]; };
layout(std430, binding = 5) readonly buffer Gate { float gate[]; };

layout(push_constant) uniform Push {
  uint q_stride, q_head_stride, q_offset, n_q_heads;
  uint dk, dv, n_kv_heads, group;
  uint g_stride, g_head_stride, g_offset, flags;
  uint out_stride;
  float scale;
  uint n_tokens, pad0;
  uint pos_offset, seq_offset, pages_offset, max_pages;
  uint hg, bq, pad1, pad2;  // query heads per workgroup, batch rows per workgroup
} p;

// Row strides in vec4 / uvec4 units, padded by one against bank conflicts.
shared vec4 sq[kMaxR * 33];                         // R query rows of dk / 4 (+ 1), times the scale
shared uvec4 skv[kKT * (kMaxDim / (4 * kPer) + 1)];  // K or V tile [key][words / 4 + 1]
shared vec4 sp[kMaxR * kKT / 4];                    // scores, then probabilities [row][key]
shared float sred[256];  // per-thread partial maxima, then sums
shared float sm[kMaxR], sl[kMaxR], sc[kMaxR];
shared int s_pos[kMaxR], s_seq[kMaxR];

uint kv_row(int seq, uint key) {
  return uint(step[p.pages_offset + uint(seq) * p.max_pages + key / 16]) * 16 + key % 16;
}

void main() {
  const uint tid = gl_LocalInvocationID.x;
  const uint n_hsub = (p.group + p.hg - 1) / p.hg;
  const uint kvh = gl_WorkGroupID.x / n_hsub, hsub = gl_WorkGroupID.x % n_hsub;
  const uint t0 = gl_WorkGroupID.y * p.bq;
  const uint R = p.hg * p.bq, qs = p.dk / 4 + 1;  // qs: vec4 per query row
  // uvec4 per key / value row in the pool (k4, v4), in a tile row (ks, vs), of one head (kw, vw).
  const uint k4 = p.n_kv_heads * p.dk / (4 * kPer), v4 = p.n_kv_heads * p.dv / (4 * kPer);
  const uint kw = p.dk / (4 * kPer), vw = p.dv / (4 * kPer), ks = kw + 1, vs = vw + 1;
  const uint pk = kKT / 4;  // vec4 per probability row

  // Row r: batch row t0 + r / hg, query head kvh * group + hsub * hg + r % hg.
  for (uint i = tid; i < R * p.dk; i += 256) {
    const uint r = i / p.dk, d = i % p.dk, t = t0 + r / p.hg, g = hsub * p.hg + r % p.hg;
    sq[r * qs + d / 4][d % 4] =
        t < p.n_tokens && g < p.group
            ? q[t * p.q_stride + p.q_offset + (kvh * p.group + g) * p.q_head_stride + d] * p.scale
            : 0.0;
  }
  if (tid < p.bq) {
    const uint t = t0 + tid;
    s_pos[tid] = t < p.n_tokens ? step[p.pos_offset + t] : -1;
    s_seq[tid] = t < p.n_tokens ? step[p.seq_offset + t] : -1;
  }
  if (tid < kMaxR) {
    sm[tid] = -1.0 / 0.0;
    sl[tid] = 0.0;
  }
  barrier();

  // Scores: key tid % kKT against rows (tid / kKT) * rpt .. + rpt.
  const uint rpt = (R * kKT + 255) / 256, kx = tid % kKT, qy = tid / kKT;
  // Softmax statistics: `parts` threads per row, each over keys j0 .. j1.
  const uint parts = 256 / kMaxR, sr = tid / parts, part = tid % parts, kpp = max(1u, kKT / parts);
  const uint j0 = min(part * kpp, kKT), j1 = min(j0 + kpp, kKT);
  // Output: dims 2 (tid % 64) + 128 c (+ 1), rows (tid / 64) * rpg .. + rpg.
  const uint dp = tid % 64, rg = tid / 64, rpg = (R + 3) / 4;
  vec2 acc[8][2];
  [[unroll]] for (uint i = 0; i < 8; ++i) acc[i][0] = acc[i][1] = vec2(0.0);

  uint done = 0;  // bit per block row already served
  for (;;) {
    int seq = -1, max_pos = -1;
    for (uint b = 0; b < p.bq; ++b)
      if ((done & (1u << b)) == 0u && s_seq[b] >= 0 && (seq < 0 || s_seq[b] == seq)) {
        seq = s_seq[b];
        max_pos = max(max_pos, s_pos[b]);
      }
    if (seq < 0) break;
    for (uint base = 0; base <= uint(max_pos); base += kKT) {
      for (uint i = tid; i < kKT * kw; i += 256) {
        const uint j = i / kw, w = i % kw, key = base + j;
        skv[j * ks + w] = key <= uint(max_pos) ? kc[kv_row(seq, key) * k4 + kvh * kw + w] : uvec4(0u);
      }
      barrier();
      {
        float s[4] = float[4](0.0, 0.0, 0.0, 0.0);
        for (uint w = 0; w < kw; ++w) {
          const uvec4 kk = skv[kx * ks + w];
#ifdef KV_F32
          const vec4 ka = uintBitsToFloat(kk);
          [[unroll]] for (uint i = 0; i < 4; ++i)
            if (i < rpt) s[i] += dot(sq[(qy * rpt + i) * qs + w], ka);
#else
          const vec4 ka = vec4(unpackHalf2x16(kk.x), unpackHalf2x16(kk.y));
          const vec4 kb = vec4(unpackHalf2x16(kk.z), unpackHalf2x16(kk.w));
          [[unroll]] for (uint i = 0; i < 4; ++i)
            if (i < rpt) {
              const uint o = (qy * rpt + i) * qs + 2 * w;
              s[i] += dot(sq[o], ka) + dot(sq[o + 1], kb);
            }
#endif
        }
        const uint key = base + kx;
        [[unroll]] for (uint i = 0; i < 4; ++i) {
          const uint r = qy * rpt + i;
          if (i < rpt && r < R) {
            const uint b = r / p.hg;
            const bool live = s_seq[b] == seq && int(key) <= s_pos[b] && (done & (1u << b)) == 0u;
            sp[r * pk + kx / 4][kx % 4] = live ? s[i] : -1.0 / 0.0;
          }
        }
      }
      barrier();
      float mx = -1.0 / 0.0;
      if (sr < R)
        for (uint j = j0; j < j1; ++j) mx = max(mx, sp[sr * pk + j / 4][j % 4]);
      sred[tid] = mx;
      barrier();
      float m_new = -1.0 / 0.0, c = 1.0;
      if (sr < R) {
        for (uint i = 0; i < parts; ++i) m_new = max(m_new, sred[sr * parts + i]);
        const float m_old = sm[sr];
        m_new = max(m_old, m_new);
        c = m_new == -1.0 / 0.0 ? 1.0 : exp(m_old - m_new);
        float sum = 0.0;
        for (uint j = j0; j < j1; ++j) {
          const float sv = sp[sr * pk + j / 4][j % 4];
          const float pr = sv == -1.0 / 0.0 ? 0.0 : exp(sv - m_new);
          sp[sr * pk + j / 4][j % 4] = pr;
          sum += pr;
        }
        mx = sum;
      }
      barrier();
      sred[tid] = mx;
      // V tile while the sums settle (the K tile is no longer read).
      for (uint i = tid; i < kKT * vw; i += 256) {
        const uint j = i / vw, w = i % vw, key = base + j;
        skv[j * vs + w] = key <= uint(max_pos) ? vc[kv_row(seq, key) * v4 + kvh * vw + w] : uvec4(0u);
      }
      barrier();
      if (sr < R && part == 0) {
        float sum = 0.0;
        for (uint i = 0; i < parts; ++i) sum += sred[sr * parts + i];
        sl[sr] = sl[sr] * c + sum;
        sm[sr] = m_new;
        sc[sr] = c;
      }
      barrier();
      [[unroll]] for (uint i = 0; i < 8; ++i) {
        const uint r = rg * rpg + i;
        if (i < rpg && r < R) {
          const float cr = sc[r];
          acc[i][0] *= cr;
          acc[i][1] *= cr;
        }
      }
      for (uint j = 0; j < kKT; j += 4) {
        vec4 pr[8];
        [[unroll]] for (uint i = 0; i < 8; ++i) {
          const uint r = rg * rpg + i;
          pr[i] = i < rpg && r < R ? sp[r * pk + j / 4] : vec4(0.0);
        }
        [[unroll]] for (uint c2 = 0; c2 < 2; ++c2) {
          const uint d = 2 * dp + 128 * c2;
          if (d >= p.dv) continue;
          [[unroll]] for (uint jj = 0; jj < 4; ++jj) {
#ifdef KV_F32
            const uvec4 u = skv[(j + jj) * vs + d / 4];
            const vec2 vv = uintBitsToFloat(d % 4 == 0 ? u.xy : u.zw);
#else
            const vec2 vv = unpackHalf2x16(skv[(j + jj) * vs + d / 8][(d / 2) % 4]);
#endif
            [[unroll]] for (uint i = 0; i < 8; ++i) acc[i][c2] += pr[i][jj] * vv;
          }
        }
      }
      barrier();
    }
    for (uint b = 0; b < p.bq; ++b)
      if (s_seq[b] == seq) done |= 1u << b;
  }

  const bool gated = (p.flags & 1u) != 0u;
  [[unroll]] for (uint i = 0; i < 8; ++i) {
    const uint r = rg * rpg + i;
    if (i >= rpg || r >= R) continue;
    const uint t = t0 + r / p.hg, g = hsub * p.hg + r % p.hg;
    if (t >= p.n_tokens || g >= p.group) continue;
    const uint h = kvh * p.group + g;
    const float inv = 1.0 / sl[r];
    const uint o = t * p.out_stride + h * p.dv;
    const uint gb = t * p.g_stride + p.g_offset + h * p.g_head_stride;
    [[unroll]] for (uint c2 = 0; c2 < 2; ++c2) {
      const uint d = 2 * dp + 128 * c2;
      [[unroll]] for (uint e = 0; e < 2; ++e)
        if (d + e < p.dv)
          out_[o + d + e] = acc[i][c2][e] * inv * (gated ? 1.0 / (1.0 + exp(-gate[gb + d + e])) : 1.0);
    }
  }
}
