// RoPE of adjacent pairs (graph::RopeMode::kNorm) and the KV cache store as a matvec epilogue:
// rows (2i', 2i' + 1) of the output are one pair, so the invocation writing rows ra, rb = ra + 1
// of token t holds both. Flags bit 5: the pair is rotated by the angle of its dim pair i
// (i < n_pairs) at token t (the cos/sin table of ops::Rope, in the step buffer at table_offset);
// bit 6: the (rotated) pair is also stored as an f16 word into row (page * 16 + slot) of a
// layer's pool (the K or V pool of graph::KvWrite; output rows are its packed heads).
// Include after the push block (head_dim .. max_pages).
layout(std430, binding = 11) writeonly buffer KvPool { uint kv_pool[]; };
layout(std430, binding = 12) readonly buffer StepWords { int step_words[]; };

const uint kRopeFlag = 32u, kStoreFlag = 64u;

// Pool row of token t (ops::StepData).
uint pool_row(uint t) {
  const int pos = step_words[p.pos_offset + t], seq = step_words[p.seq_offset + t];
  const int page = step_words[p.pages_offset + uint(seq) * p.max_pages + uint(pos) / 16];
  return uint(page) * 16 + uint(pos) % 16;
}

// (cos, sin) of dim pair i at token t.
vec2 angle(uint t, uint i) {
  const uint w = p.table_offset + (t * p.n_pairs + i) * 2;
  return vec2(intBitsToFloat(step_words[w]), intBitsToFloat(step_words[w + 1]));
}

// Rows e, e + 1 (e even, indices within a token's output) with values a, b: rotated and stored
// into pool row `row` as flagged.
void rope_kv_epilogue(uint t, uint e, uint row, inout float a, inout float b) {
  if ((p.flags & kRopeFlag) != 0u) {
    const uint i = (e % p.head_dim) / 2;
    if (i < p.n_pairs) {
      const vec2 cs = angle(t, i);
      const float r0 = a * cs.x - b * cs.y;
      b = a * cs.y + b * cs.x;
      a = r0;
    }
  }
  if ((p.flags & kStoreFlag) != 0u) kv_pool[row * p.row_words + e / 2] = packHalf2x16(vec2(a, b));
}

// Flags bit 7: the workgroup's rows are one head (rows_per_group = head_dim, row0 its first row):
// its values meet in s_head, and head_epilogue() then normalises the head (bit 9: the per-head
// RMS norm of graph::QkNorm with head_w, eps in conv_taps' bits), rotates it (pairs (i, i + n)
// of NEOX and IMROPE, bit 8: adjacent pairs (2i, 2i + 1)), writes it to y and, with bit 6,
// stores it into the pool.
layout(std430, binding = 13) readonly buffer HeadW { float head_w[]; };

const uint kHeadFlag = 128u, kAdjacentFlag = 256u, kHeadNormFlag = 512u, kMaxHeadDim = 256;
shared float s_head[kMaxHeadDim];
shared float s_head_red[kGroupSize / kMinSubgroupSize];

float head_normed(uint d, float inv) {
  return (p.flags & kHeadNormFlag) != 0u ? (s_head[d] * inv) * head_w[d] : s_head[d];
}

// Element d of the head, normalised and rotated.
float head_value(uint t, uint d, float inv) {
  const uint n = p.n_pairs;
  const bool adj = (p.flags & kAdjacentFlag) != 0u, rot = d < 2 * n;
  const uint pair = !rot ? 0u : adj ? d / 2 : d < n ? d : d - n;
  const uint other = !rot ? d : adj ? d ^ 1u : d < n ? d + n : d - n;
  const bool first = adj ? (d & 1u) == 0u : d < n;  // the pair's first element: x0 c - x1 s
  const float x = head_normed(d, inv), o = head_normed(other, inv);
  if (!rot) return x;
  const vec2 cs = angle(t, pair);
  return x * cs.x + (first ? -o : o) * cs.y;
}

// After the head's values are in s_head (and a barrier): y and the pool get the result.
void head_epilogue(uint t, uint row0, uint row, uint n_threads) {
  const uint tid = gl_LocalInvocationID.x, dim = p.head_dim;
  float inv = 1.0;
  if ((p.flags & kHeadNormFlag) != 0u) {
    float ss = 0.0;
    for (uint d = tid; d < dim; d += n_threads) ss += s_head[d] * s_head[d];
    ss = subgroupAdd(ss);
    if (subgroupElect()) s_head_red[gl_SubgroupID] = ss;
    barrier();
    float total = 0.0;
    for (uint i = 0; i < gl_NumSubgroups; ++i) total += s_head_red[i];
    inv = inversesqrt(total / float(dim) + uintBitsToFloat(p.conv_taps));
  }
  const uint base = t * p.y_stride + p.y_offset + row0;
  for (uint w = tid; w < dim / 2; w += n_threads) {
    const float a = head_value(t, 2 * w, inv), b = head_value(t, 2 * w + 1, inv);
    y[base + 2 * w] = a;
    y[base + 2 * w + 1] = b;
    if ((p.flags & kStoreFlag) != 0u) kv_pool[row * p.row_words + (p.y_offset + row0) / 2 + w] = packHalf2x16(vec2(a, b));
  }
}
