// The k largest of up to kTopkPerLane x the subgroup size values, ranked by one subgroup: lane l
// holds values l, l + S, l + 2S, ... in v (-inf past `rows`). Calls store_rank(dst + r, index) in
// one lane for ranks r = 0..k-1, largest first, ties to the lower index (as moe_route.comp). The
// includer defines kTopkPerLane and store_rank before including; subgroup arithmetic enabled.
void rank_top(inout float v[kTopkPerLane], uint rows, uint k, uint dst) {
  const uint lane = gl_SubgroupInvocationID, step = gl_SubgroupSize;
  for (uint r = 0; r < k; ++r) {
    float best = -1.0 / 0.0;
    uint bi = 0xFFFFFFFFu;
    [[unroll]] for (uint u = 0; u < kTopkPerLane; ++u)
      if (v[u] > best || (bi == 0xFFFFFFFFu && lane + u * step < rows && v[u] == best)) {
        best = v[u];
        bi = lane + u * step;
      }
    const float mb = subgroupMax(best);
    const uint wi = subgroupMin(best == mb ? bi : 0xFFFFFFFFu);
    if (subgroupElect()) store_rank(dst + r, wi);
    [[unroll]] for (uint u = 0; u < kTopkPerLane; ++u)
      if (lane + u * step == wi) v[u] = -1.0 / 0.0;
  }
}
