#version 450
// Stores each token's K and V heads in the device KV pool of one layer: rows of
// n_kv_heads * head_dim elements at row (page * 16 + slot), page = pages[seq][pos / 16],
// as f16 pairs packed in uint words (KV_F32: float words). One workgroup per token.
layout(local_size_x = 64) in;

layout(std430, binding = 0) readonly buffer K { float k[]; };
layout(std430, binding = 1) readonly buffer V { float v[]; };
layout(std430, binding = 2) readonly buffer Step { int step[]; };
layout(std430, binding = 3) writeonly buffer KC { uint kc[]; };
layout(std430, binding = 4) writeonly buffer VC { uint vc[]; };

layout(push_constant) uniform Push {
  uint k_stride, k_heads, k_dim, k_head_stride, k_offset;
  uint v_stride, v_heads, v_dim, v_head_stride, v_offset;
  uint pos_offset, seq_offset, pages_offset, max_pages;  // step buffer words
} p;

#ifdef KV_F32
const uint kPer = 1;
#else
const uint kPer = 2;
#endif

void store(uint t, uint row, bool is_v) {
  const uint n_heads = is_v ? p.v_heads : p.k_heads, dim = is_v ? p.v_dim : p.k_dim;
  const uint stride = is_v ? p.v_stride : p.k_stride, head_stride = is_v ? p.v_head_stride : p.k_head_stride;
  const uint offset = is_v ? p.v_offset : p.k_offset;
  const uint words = n_heads * dim / kPer;
  for (uint wi = gl_LocalInvocationID.x; wi < words; wi += 64) {
    const uint e = wi * kPer, head = e / dim, d = e % dim;
    const uint src = t * stride + offset + head * head_stride + d;
#ifdef KV_F32
    const uint word = floatBitsToUint(is_v ? v[src] : k[src]);
#else
    const uint word = is_v ? packHalf2x16(vec2(v[src], v[src + 1])) : packHalf2x16(vec2(k[src], k[src + 1]));
#endif
    if (is_v)
      vc[row * words + wi] = word;
    else
      kc[row * words + wi] = word;
  }
}

void main() {
  const uint t = gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x;
  const int pos = step[p.pos_offset + t], seq = step[p.seq_offset + t];
  const int page = step[p.pages_offset + uint(seq) * p.max_pages + uint(pos) / 16];
  const uint row = uint(page) * 16 + uint(pos) % 16;
  store(t, row, false);
  store(t, row, true);
}
