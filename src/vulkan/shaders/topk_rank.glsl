// The k largest of `rows` values, ranked by the whole workgroup. The includer names a shared
// float array RANK_VALUES, its length RANK_MAX_ROWS (a multiple of the subgroup size) and a
// constant RANK_PARTS (a power of two, at most the subgroup size), defines store_rank(i, index)
// before including, stages the values in RANK_VALUES[0, rows) through rank_value (NaN ranks as
// -inf) and calls rank_top after a barrier, from uniform control flow. A value's rank is the
// count of the larger values and the equal ones of lower index (largest first, ties to the lower
// index, as moe_route.comp); a rank below k calls store_rank(dst + rank, index).
// Two forms, one per pipeline (RANK_PARTS is a constant: on the H100 each form's code compiled
// in beside the other cost the model the other form serves 1.2-1.4 %, session 37):
// - RANK_PARTS > 1, for workgroups with invocations to spare (the 30B's 128 experts in 256):
//   that many neighbouring lanes share a value's count against every value, each over every
//   RANK_PARTS-th value with four loads in flight, and add their counts by shuffles.
// - RANK_PARTS == 1 (the 35B's 256 experts): each subgroup ranks its chunk of values among
//   themselves by shuffles and keeps those ranked below k as candidates; then each candidate is
//   ranked among the candidates, which hold every value ahead of any of the k largest, up to 8
//   neighbouring lanes sharing a candidate's count.
// On the H100 (session 38), against counting every value one lane a value: 30B +1.7 % with the
// first form, 35B +2.2 % with the second.
float rank_value(float v) { return isnan(v) ? -1.0 / 0.0 : v; }

bool rank_ahead(float w, uint wi, float v, uint vi) { return w > v || (w == v && wi < vi); }

const uint kRankCands = RANK_PARTS > 1u ? 1u : RANK_MAX_ROWS;
shared float s_cand_v[kRankCands];
shared uint s_cand_i[kRankCands];

void rank_top_lanes(uint rows, uint k, uint dst) {
  const uint threads = gl_WorkGroupSize.x, parts = RANK_PARTS;
  const uint lt = gl_SubgroupID * gl_SubgroupSize + gl_SubgroupInvocationID;  // a subgroup's lanes contiguous
  const uint part = lt % parts, per_pass = threads / parts;
  for (uint i0 = 0u; i0 < rows; i0 += per_pass) {
    const uint i = i0 + lt / parts, ii = min(i, rows - 1u);
    const float v = RANK_VALUES[ii];
    uint rank = 0u, j = part;
    for (; j + 3u * parts < rows; j += 4u * parts) {  // four loads in flight
      const float w0 = RANK_VALUES[j], w1 = RANK_VALUES[j + parts];
      const float w2 = RANK_VALUES[j + 2u * parts], w3 = RANK_VALUES[j + 3u * parts];
      rank += (rank_ahead(w0, j, v, ii) ? 1u : 0u) + (rank_ahead(w1, j + parts, v, ii) ? 1u : 0u) +
              (rank_ahead(w2, j + 2u * parts, v, ii) ? 1u : 0u) + (rank_ahead(w3, j + 3u * parts, v, ii) ? 1u : 0u);
    }
    for (; j < rows; j += parts) rank += rank_ahead(RANK_VALUES[j], j, v, ii) ? 1u : 0u;
    for (uint off = 1u; off < parts; off <<= 1u) rank += subgroupShuffleXor(rank, off);
    if (i < rows && part == 0u && rank < k) store_rank(dst + rank, i);
  }
}

void rank_top_chunks(uint rows, uint k, uint dst) {
  const uint threads = gl_WorkGroupSize.x, S = gl_SubgroupSize, lane = gl_SubgroupInvocationID;
  const uint kk = min(k, S), chunks = (rows + S - 1u) / S, n_cands = chunks * kk;
  if (kk == 0u) return;
  // Candidates: past `rows` a lane holds -inf at an index no value precedes, so it fills its
  // chunk's free slots and ranks behind every value.
  for (uint c0 = 0u; c0 < chunks; c0 += gl_NumSubgroups) {
    const uint chunk = c0 + gl_SubgroupID, i = chunk * S + lane;
    const float v = i < rows ? RANK_VALUES[i] : -1.0 / 0.0;
    uint local = 0u;
    for (uint j = 0u; j < S; ++j) local += rank_ahead(subgroupShuffle(v, j), j, v, lane) ? 1u : 0u;
    if (chunk < chunks && local < kk) {
      s_cand_v[chunk * kk + local] = v;
      s_cand_i[chunk * kk + local] = i;
    }
  }
  barrier();
  uint parts = 1u;
  while (parts < 8u && 2u * parts <= S && 2u * parts * n_cands <= threads) parts *= 2u;
  const uint lt = gl_SubgroupID * S + lane, part = lt % parts, per_pass = threads / parts;
  for (uint c0 = 0u; c0 < n_cands; c0 += per_pass) {
    const uint c = min(c0 + lt / parts, n_cands - 1u);
    const float v = s_cand_v[c];
    const uint vi = s_cand_i[c];
    uint rank = 0u;
    for (uint j = part; j < n_cands; j += parts) rank += rank_ahead(s_cand_v[j], s_cand_i[j], v, vi) ? 1u : 0u;
    for (uint off = 1u; off < parts; off <<= 1u) rank += subgroupShuffleXor(rank, off);
    if (c0 + lt / parts < n_cands && part == 0u && vi < rows && rank < k) store_rank(dst + rank, vi);
  }
}

void rank_top(uint rows, uint k, uint dst) {
  if (RANK_PARTS > 1u) {
    rank_top_lanes(rows, k, dst);
  } else {
    rank_top_chunks(rows, k, dst);
  }
}
