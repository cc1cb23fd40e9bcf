// The k largest rows of each token, ranked by the last workgroup to finish it (the TOPK variant,
// flags bit 11): a folded router's logits (src/vulkan/router_fold.h) so that the gate/up only
// reads its experts. Each workgroup counts itself in head_counters[table_offset + t] after
// writing its rows; the last one reads the token's rows back (y is coherent) and ranks them
// (topk_rank.glsl), writing the indices of the n_pairs largest to binding 11 at t * n_pairs,
// largest first, ties to the lower index (as moe_route.comp), then zeroes the counter. Needs rows
// <= kRankRows and one chunk. Include after matvec_rope_kv.glsl (head_counters).
layout(std430, binding = 11) writeonly buffer TopkIds { int topk_ids[]; };  // aliases the KV pool

const uint kTopkFlag = 2048u, kRankRows = 512;  // ops::TopK::kMaxRows
shared bool s_topk_last;
shared float s_rank[kRankRows];
void store_rank(uint i, uint id) { topk_ids[i] = int(id); }
#define RANK_VALUES s_rank
#define RANK_PARTS 1u
#define RANK_MAX_ROWS kRankRows
#include "topk_rank.glsl"

void topk_epilogue(uint t) {
  memoryBarrierBuffer();
  barrier();
  const uint tid = gl_LocalInvocationID.x, n_groups = gl_NumWorkGroups.x * gl_NumWorkGroups.y;
  if (tid == 0) s_topk_last = atomicAdd(head_counters[p.table_offset + t], 1u) == n_groups - 1u;
  barrier();
  if (!s_topk_last) return;
  memoryBarrierBuffer();
  const uint base = t * p.y_stride + p.y_offset;
  for (uint i = tid; i < p.rows; i += kGroupSize) s_rank[i] = rank_value(y[base + i]);
  barrier();
  rank_top(p.rows, p.n_pairs, t * p.n_pairs);
  if (tid == 0) head_counters[p.table_offset + t] = 0u;
}
