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

// Rows e, e + 1 (e even, indices within a token's output) with values a, b: rotated and stored
// into pool row `row` as flagged.
void rope_kv_epilogue(uint t, uint e, uint row, inout float a, inout float b) {
  if ((p.flags & kRopeFlag) != 0u) {
    const uint i = (e % p.head_dim) / 2;
    if (i < p.n_pairs) {
      const uint w = p.table_offset + (t * p.n_pairs + i) * 2;
      const float c = intBitsToFloat(step_words[w]), s = intBitsToFloat(step_words[w + 1]);
      const float r0 = a * c - b * s;
      b = a * s + b * c;
      a = r0;
    }
  }
  if ((p.flags & kStoreFlag) != 0u) kv_pool[row * p.row_words + e / 2] = packHalf2x16(vec2(a, b));
}
