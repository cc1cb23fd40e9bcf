#version 450
// Stores each token's K and V heads in the device KV pool of one layer: rows of
// n_kv_heads * head_dim elements at row (page * 16 + slot), page = pages[seq][pos / 16],
// as f16 pairs packed in uint words (KV_F32: float words).
// ROPE: RoPE fused in (cos/sin table as in rope.comp): the query heads are rotated in place and
// the keys on their way into the cache (the K activation is left as it was).
// NORM (with ROPE): the per-head RMS norms of q and k (graph::QkNorm, flags say which) are done
// first; one workgroup per head (SUBGROUP: reduce.glsl's subgroup sums).
#ifdef NORM
layout(local_size_x_id = 0) in;
layout(constant_id = 0) const uint kGroupSize = 64;
layout(constant_id = 1) const uint kMinSubgroupSize = 1;
#include "reduce.glsl"
#else
layout(local_size_x = 64) in;
#endif

layout(std430, binding = 0) readonly buffer K { float k[]; };
layout(std430, binding = 1) readonly buffer V { float v[]; };
layout(std430, binding = 2) readonly buffer Step { int step[]; };
layout(std430, binding = 3) writeonly buffer KC { uint kc[]; };
layout(std430, binding = 4) writeonly buffer VC { uint vc[]; };
#ifdef ROPE
layout(std430, binding = 5) buffer Q { float q[]; };
layout(std430, binding = 6) readonly buffer T { float table[]; };
#endif
#ifdef NORM
layout(std430, binding = 7) readonly buffer QW { float q_weight[]; };
layout(std430, binding = 8) readonly buffer KW { float k_weight[]; };
#endif

layout(push_constant) uniform Push {
  uint k_stride, k_heads, k_dim, k_head_stride, k_offset;
  uint v_stride, v_heads, v_dim, v_head_stride, v_offset;
  uint pos_offset, seq_offset, pages_offset, max_pages;  // step buffer words
#ifdef ROPE
  uint q_stride, q_heads, q_head_stride, q_offset;
  uint n_pairs, adjacent, table_offset;
#endif
#ifdef NORM
  uint q_dim;
  uint flags;  // bit 0: normalise q, bit 1: normalise k
  float q_eps, k_eps;
#endif
} p;

#ifdef KV_F32
const uint kPer = 1;
#else
const uint kPer = 2;
#endif

// The pool row of token t.
uint cache_row(uint t) {
  const int pos = step[p.pos_offset + t], seq = step[p.seq_offset + t];
  const int page = step[p.pages_offset + uint(seq) * p.max_pages + uint(pos) / 16];
  return uint(page) * 16 + uint(pos) % 16;
}

uint pack_word(float a, float b) {
#ifdef KV_F32
  return floatBitsToUint(a);
#else
  return packHalf2x16(vec2(a, b));
#endif
}

#ifdef ROPE
float cos_of(uint t, uint i) { return table[p.table_offset + (t * p.n_pairs + i) * 2]; }
float sin_of(uint t, uint i) { return table[p.table_offset + (t * p.n_pairs + i) * 2 + 1]; }
#endif

#ifdef NORM
const uint kMaxHeadDim = 512;
shared float s_head[kMaxHeadDim];  // a key head, rotated, for packing into cache words

// Pair slot j of a head: elements a and c, rotated together when j < n_pairs; past the rotated
// dims slot j is elements (2j, 2j + 1), and c may be the head dim (no element) for odd dims.
void slot(uint j, out uint a, out uint c) {
  const bool two = p.adjacent != 0u || j >= p.n_pairs;
  a = two ? 2 * j : j;
  c = two ? 2 * j + 1 : j + p.n_pairs;
}

float head_elem(bool is_q, uint i) { return is_q ? q[i] : k[i]; }
float weight(bool is_q, uint e) { return is_q ? q_weight[e] : k_weight[e]; }

// Grid: (q_heads + k_heads, tokens). A query head is normalised and rotated in place; a KV
// head's K is normalised and rotated into the cache and its V copied there. Each thread owns
// pair slots: it sums their squares, then reads them again (only it writes them), normalises
// and rotates them, as qk_norm.comp then rope.comp would.
void main() {
  const uint t = gl_WorkGroupID.y, tid = gl_LocalInvocationID.x;
  const bool is_q = gl_WorkGroupID.x < p.q_heads;  // uniform over the workgroup
  const uint head = is_q ? gl_WorkGroupID.x : gl_WorkGroupID.x - p.q_heads;
  const uint dim = is_q ? p.q_dim : p.k_dim, n_slots = (dim + 1) / 2;
  const uint base = is_q ? t * p.q_stride + p.q_offset + head * p.q_head_stride
                         : t * p.k_stride + p.k_offset + head * p.k_head_stride;
  const bool norm = (p.flags & (is_q ? 1u : 2u)) != 0u;  // uniform too
  const uint row = is_q ? 0u : cache_row(t);  // its loads in flight with the head's
  float scale = 1.0;
  if (norm) {
    float ss = 0.0;
    for (uint j = tid; j < n_slots; j += kGroupSize) {
      uint a, c;
      slot(j, a, c);
      const float x0 = head_elem(is_q, base + a), x1 = c < dim ? head_elem(is_q, base + c) : 0.0;
      ss += x0 * x0 + x1 * x1;
    }
    scale = inversesqrt(workgroup_sum(ss) / float(dim) + (is_q ? p.q_eps : p.k_eps));
  }
  for (uint j = tid; j < n_slots; j += kGroupSize) {
    uint a, c;
    slot(j, a, c);
    const bool has_c = c < dim;
    float y0 = head_elem(is_q, base + a), y1 = has_c ? head_elem(is_q, base + c) : 0.0;
    if (norm) {
      y0 = (y0 * scale) * weight(is_q, a);
      y1 = has_c ? (y1 * scale) * weight(is_q, c) : 0.0;
    }
    if (j < p.n_pairs) {
      const float cs = cos_of(t, j), sn = sin_of(t, j);
      const float r0 = y0 * cs - y1 * sn;
      y1 = y0 * sn + y1 * cs;
      y0 = r0;
    }
    if (is_q) {
      q[base + a] = y0;
      if (has_c) q[base + c] = y1;
    } else {
      s_head[a] = y0;
      if (has_c) s_head[c] = y1;
    }
  }
  if (is_q) return;
  barrier();
  const uint k_words = dim / kPer, v_words = p.v_dim / kPer;
  for (uint w = tid; w < k_words; w += kGroupSize) {
    const uint e = w * kPer;
    kc[(row * p.k_heads + head) * k_words + w] = pack_word(s_head[e], kPer == 2 ? s_head[e + 1] : 0.0);
  }
  const uint vb = t * p.v_stride + p.v_offset + head * p.v_head_stride;
  for (uint w = tid; w < v_words; w += kGroupSize) {
    const uint e = vb + w * kPer;
    vc[(row * p.v_heads + head) * v_words + w] = pack_word(v[e], kPer == 2 ? v[e + 1] : 0.0);
  }
}

#else

#ifdef ROPE
// Element d of a key head starting at k[base], rotated.
float roped_k(uint t, uint base, uint d) {
  const uint n = p.n_pairs;
  if (d >= 2 * n) return k[base + d];
  if (p.adjacent != 0u) {
    const uint i = d / 2;
    const float x0 = k[base + 2 * i], x1 = k[base + 2 * i + 1];
    return (d & 1u) == 0u ? x0 * cos_of(t, i) - x1 * sin_of(t, i) : x0 * sin_of(t, i) + x1 * cos_of(t, i);
  }
  const uint i = d < n ? d : d - n;
  const float x0 = k[base + i], x1 = k[base + i + n];
  return d < n ? x0 * cos_of(t, i) - x1 * sin_of(t, i) : x0 * sin_of(t, i) + x1 * cos_of(t, i);
}
#endif

// Word wi of token t's K (or V) row.
void store_word(uint t, uint row, bool is_v, uint wi) {
  const uint n_heads = is_v ? p.v_heads : p.k_heads, dim = is_v ? p.v_dim : p.k_dim;
  const uint stride = is_v ? p.v_stride : p.k_stride, head_stride = is_v ? p.v_head_stride : p.k_head_stride;
  const uint offset = is_v ? p.v_offset : p.k_offset;
  const uint words = n_heads * dim / kPer;
  const uint e = wi * kPer, head = e / dim, d = e % dim;
  const uint src = t * stride + offset + head * head_stride + d;
#ifdef ROPE
  const uint hb = src - d;
  const float k0 = is_v ? 0.0 : roped_k(t, hb, d);
  const float k1 = is_v || kPer == 1 ? 0.0 : roped_k(t, hb, d + 1);
#else
  const float k0 = is_v ? 0.0 : k[src];
  const float k1 = is_v || kPer == 1 ? 0.0 : k[src + 1];
#endif
  const uint word = is_v ? pack_word(v[src], kPer == 2 ? v[src + 1] : 0.0) : pack_word(k0, k1);
  if (is_v)
    vc[row * words + wi] = word;
  else
    kc[row * words + wi] = word;
}

// Grid: (units / 64 rounded up, tokens). Each invocation does one unit of its token: a K word,
// a V word, or (ROPE) one rotated query pair, so a token's work is spread over the GPU.
void main() {
  const uint t = gl_WorkGroupID.y;
  const uint u = gl_WorkGroupID.x * 64 + gl_LocalInvocationID.x;
  const uint kw = p.k_heads * p.k_dim / kPer, vw = p.v_heads * p.v_dim / kPer;
  if (u < kw + vw) {
    store_word(t, cache_row(t), u >= kw, u >= kw ? u - kw : u);
    return;
  }
#ifdef ROPE
  const uint w = u - kw - vw;
  if (w < p.q_heads * p.n_pairs) {
    const uint head = w / p.n_pairs, i = w % p.n_pairs;
    const uint base = t * p.q_stride + p.q_offset + head * p.q_head_stride;
    const uint a = p.adjacent != 0u ? base + 2 * i : base + i;
    const uint c = p.adjacent != 0u ? base + 2 * i + 1 : base + i + p.n_pairs;
    const float x0 = q[a], x1 = q[c];
    q[a] = x0 * cos_of(t, i) - x1 * sin_of(t, i);
    q[c] = x0 * sin_of(t, i) + x1 * cos_of(t, i);
  }
#endif
}

#endif
