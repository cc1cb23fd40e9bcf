// The k largest of `rows` values, ranked by the whole workgroup. The includer names a shared
// float array RANK_VALUES and defines store_rank(i, index) before including, stages the values in
// RANK_VALUES[0, rows) through rank_value (NaN ranks as -inf) and calls rank_top after a
// barrier. Each invocation counts, for the values it takes, the larger ones and the equal ones of
// lower index: that count is the value's rank (largest first, ties to the lower index, as
// moe_route.comp), and a rank below k calls store_rank(dst + rank, index). Every invocation is
// busy with one pass over shared memory, where picking the largest left in one subgroup took k
// dependent rounds of subgroup reductions.
float rank_value(float v) { return isnan(v) ? -1.0 / 0.0 : v; }

void rank_top(uint rows, uint k, uint dst) {
  for (uint i = gl_LocalInvocationID.x; i < rows; i += gl_WorkGroupSize.x) {
    const float v = RANK_VALUES[i];
    uint rank = 0u;
    for (uint j = 0u; j < i; ++j) rank += RANK_VALUES[j] >= v ? 1u : 0u;
    for (uint j = i + 1u; j < rows; ++j) rank += RANK_VALUES[j] > v ? 1u : 0u;
    if (rank < k) store_rank(dst + rank, i);
  }
}
