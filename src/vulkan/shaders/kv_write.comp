#version 450
// Stores each token's K and V heads in the device KV pool of one layer: rows of
// n_kv_heads * head_dim elements at row (page * 16 + slot), page = pages[seq][pos / 16],
// as f16 pairs packed in uint words (KV_F32: float words).
// ROPE: RoPE fused in (cos/sin table as in rope.comp): the query heads are rotated in place and
// the keys on their way into the cache (the K activation is left as it was).
layout(local_size_x = 64) in;

layout(std430, binding = 0) readonly buffer K { float k[]; };
layout(std430, binding = 1) readonly buffer V { float v[]; };
layout(std430, binding = 2) readonly buffer Step { int step[]; };
layout(std430, binding = 3) writeonly buffer KC { uint kc[]; };
layout(std430, binding = 4) writeonly buffer VC { uint vc[]; };
#ifdef ROPE
layout(std430, binding = 5) buffer Q { float q[]; };
layout(std430, binding = 6) readonly buffer T { float table[]; };
#endif

layout(push_constant) uniform Push {
  uint k_stride, k_heads, k_dim, k_head_stride, k_offset;
  uint v_stride, v_heads, v_dim, v_head_stride, v_offset;
  uint pos_offset, seq_offset, pages_offset, max_pages;  // step buffer words
#ifdef ROPE
  uint q_stride, q_heads, q_head_stride, q_offset;
  uint n_pairs, adjacent, table_offset;
#endif
} p;

#ifdef ROPE
float cos_of(uint t, uint i) { return table[p.table_offset + (t * p.n_pairs + i) * 2]; }
float sin_of(uint t, uint i) { return table[p.table_offset + (t * p.n_pairs + i) * 2 + 1]; }

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

#ifdef KV_F32
const uint kPer = 1;
#else
const uint kPer = 2;
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
#ifndef KV_F32
  const float k1 = is_v ? 0.0 : roped_k(t, hb, d + 1);
#endif
#else
  const float k0 = is_v ? 0.0 : k[src];
#ifndef KV_F32
  const float k1 = is_v ? 0.0 : k[src + 1];
#endif
#endif
#ifdef KV_F32
  const uint word = floatBitsToUint(is_v ? v[src] : k0);
#else
  const uint word = is_v ? packHalf2x16(vec2(v[src], v[src + 1])) : packHalf2x16(vec2(k0, k1));
#endif
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
    const int pos = step[p.pos_offset + t], seq = step[p.seq_offset + t];
    const int page = step[p.pages_offset + uint(seq) * p.max_pages + uint(pos) / 16];
    const uint row = uint(page) * 16 + uint(pos) % 16;
    store_word(t, row, u >= kw, u >= kw ? u - kw : u);
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
