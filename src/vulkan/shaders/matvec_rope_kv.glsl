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

// Flags bit 7: QK-norm / RoPE heads finished by a workgroup each. Head h holds output rows
// [h * head_stride, h * head_stride + head_dim) (head_stride >= head_dim: rows between heads, such
// as Qwen3.5's output gate, are written as they are). The product's rows split over workgroups
// as usual; each workgroup writes its raw rows, then counts itself in the counter of every head
// it touched (head_counters, from word counter_offset + t * n_heads; zero before, left zero); the
// last of a head's workgroups reads the head back, normalises it (bit 9: the per-head RMS norm of
// graph::QkNorm with head_w, eps in conv_taps' bits), rotates it (pairs (i, i + n) of NEOX and
// IMROPE, bit 8: adjacent pairs (2i, 2i + 1)), writes it to y and, with bit 6, stores it into the
// pool (packed heads only). head_stride and counter_offset are push fields slot_floats and
// state_offset.
layout(std430, binding = 13) readonly buffer HeadW { float head_w[]; };
layout(std430, binding = 14) coherent buffer HeadCounters { uint head_counters[]; };

const uint kHeadFlag = 128u, kAdjacentFlag = 256u, kHeadNormFlag = 512u, kMaxHeadDim = 256;
shared float s_head[kMaxHeadDim];
shared float s_head_red[kGroupSize / kMinSubgroupSize];
shared uint s_heads_done;

// What element d of a head takes besides the head's values: its norm weight and its partner's,
// and its pair's angle at token t. The same for every head, so finish_heads loads them before the
// workgroup counts itself, off the chain of the head's last workgroup.
struct HeadTerms {
  float w, wo;
  vec2 cs;
};

uint head_other(uint d) {
  const uint n = p.n_pairs;
  const bool adj = (p.flags & kAdjacentFlag) != 0u;
  return d >= 2 * n ? d : adj ? d ^ 1u : d < n ? d + n : d - n;
}

HeadTerms head_terms(uint t, uint d) {
  const uint n = p.n_pairs;
  const bool adj = (p.flags & kAdjacentFlag) != 0u, rot = d < 2 * n, normed = (p.flags & kHeadNormFlag) != 0u;
  HeadTerms k;
  k.w = normed ? head_w[d] : 1.0;
  k.wo = normed ? head_w[head_other(d)] : 1.0;
  k.cs = rot ? angle(t, adj ? d / 2 : d < n ? d : d - n) : vec2(1.0, 0.0);
  return k;
}

float head_normed(uint d, float inv, float w) {
  return (p.flags & kHeadNormFlag) != 0u ? (s_head[d] * inv) * w : s_head[d];
}

// Element d of the head, normalised and rotated.
float head_value(uint d, float inv, HeadTerms k) {
  const uint n = p.n_pairs;
  const bool adj = (p.flags & kAdjacentFlag) != 0u, rot = d < 2 * n;
  const bool first = adj ? (d & 1u) == 0u : d < n;  // the pair's first element: x0 c - x1 s
  const float x = head_normed(d, inv, k.w), o = head_normed(head_other(d), inv, k.wo);
  if (!rot) return x;
  return x * k.cs.x + (first ? -o : o) * k.cs.y;
}

// Head h of token t, its raw values in s_head (after a barrier): y and the pool get the result.
// pre0, pre1: the terms of elements 2 tid and 2 tid + 1 (head_terms), when tid < head_dim / 2.
void head_epilogue(uint t, uint h, uint row, uint n_threads, HeadTerms pre0, HeadTerms pre1) {
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
  const uint base = t * p.y_stride + p.y_offset + h * p.slot_floats;
  for (uint w = tid; w < dim / 2; w += n_threads) {
    const bool mine = w == tid;
    const float a = head_value(2 * w, inv, mine ? pre0 : head_terms(t, 2 * w));
    const float b = head_value(2 * w + 1, inv, mine ? pre1 : head_terms(t, 2 * w + 1));
    y[base + 2 * w] = a;
    y[base + 2 * w + 1] = b;
    if ((p.flags & kStoreFlag) != 0u) kv_pool[row * p.row_words + (p.y_offset + h * dim) / 2 + w] = packHalf2x16(vec2(a, b));
  }
}

// After the workgroup's rows [row0, row0 + rows_per_group) of token t are written to y: counts
// the workgroup in its heads and finishes those it completed (uniform control flow).
void finish_heads(uint t, uint row0, uint row, uint n_threads) {
  const uint tid = gl_LocalInvocationID.x, stride = p.slot_floats, dim = p.head_dim, rpg = p.rows_per_group;
  const uint n_heads = p.rows / stride, row_end = min(row0 + rpg, p.rows);
  const uint h0 = row0 / stride, h1 = min((row_end - 1) / stride + 1, n_heads);  // heads [h0, h1) may meet ours
  HeadTerms pre0 = HeadTerms(1.0, 1.0, vec2(1.0, 0.0)), pre1 = pre0;
  if (tid < dim / 2) {  // requested now, used only if this workgroup finishes a head
    pre0 = head_terms(t, 2 * tid);
    pre1 = head_terms(t, 2 * tid + 1);
  }
  memoryBarrierBuffer();
  barrier();
  if (tid == 0) {
    uint done = 0u;
    for (uint h = h0; h < h1; ++h) {
      const uint first = h * stride, last = first + dim - 1;
      if (last < row0 || first >= row_end) continue;
      const uint expected = last / rpg - first / rpg + 1;
      if (atomicAdd(head_counters[p.state_offset + t * n_heads + h], 1u) == expected - 1u) done |= 1u << (h - h0);
    }
    s_heads_done = done;
  }
  barrier();
  const uint done = s_heads_done;
  if (done == 0u) return;
  memoryBarrierBuffer();
  for (uint h = h0; h < h1; ++h) {
    if ((done & (1u << (h - h0))) == 0u) continue;
    const uint base = t * p.y_stride + p.y_offset + h * stride;
    for (uint d = tid; d < dim; d += n_threads) s_head[d] = y[base + d];
    barrier();
    head_epilogue(t, h, row, n_threads, pre0, pre1);
    if (tid == 0) head_counters[p.state_offset + t * n_heads + h] = 0u;
    barrier();
  }
}
