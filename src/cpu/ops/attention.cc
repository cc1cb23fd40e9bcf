// attention: causal GQA over the paged cache, one (token, query head) per task, with an online
// softmax (running max and sum, page by page) so no score buffer is needed; optional sigmoid
// output gate.
#include <algorithm>
#include <cmath>
#include <limits>

#include "core/check.h"
#include "core/fp16.h"
#include "cpu/ops/fp16_table.h"
#include "cpu/ops/ops.h"

namespace zinc::cpu::ops {

const float* fp16_table() {
  static const float* table = [] {
    static float t[65536];
    for (uint32_t i = 0; i < 65536; ++i) t[i] = fp16_to_f32(uint16_t(i));
    return t;
  }();
  return table;
}

namespace {

constexpr int kMaxHeadDim = 1024;

template <bool kF16>
void attend_one(const graph::Attention& op, const OpContext& ctx, int64_t t, int32_t head, const float* f16) {
  const auto& kv = ctx.graph.state().kv_layers[size_t(op.kv_layer)];
  const int32_t dk = kv.head_dim_k, dv = kv.head_dim_v;
  const int32_t group = op.q_heads.n_heads / kv.n_head_kv;
  const int32_t kvh = head / group;
  const kv::SeqId seq = ctx.batch.seq_ids[size_t(t)];
  const int64_t pos = ctx.batch.positions[size_t(t)];
  const float* q = ctx.f32(op.q) + t * ctx.buf(op.q).cols + op.q_heads.offset + int64_t(head) * op.q_heads.head_stride;

  // Online softmax, one page (up to 16 keys) at a time: scores of the page, then one rescale of
  // the running sum and accumulator when the maximum grows.
  float acc[kMaxHeadDim];
  for (int32_t i = 0; i < dv; ++i) acc[i] = 0.f;
  float m = -std::numeric_limits<float>::infinity(), l = 0.f;
  const auto pages = ctx.cache.page_table(seq);
  for (int64_t first = 0; first <= pos; first += kv::kPageTokens) {
    const int32_t page = pages[size_t(first / kv::kPageTokens)];
    const int32_t n = int32_t(std::min<int64_t>(kv::kPageTokens, pos + 1 - first));
    float s[kv::kPageTokens];
    float block_max = -std::numeric_limits<float>::infinity();
    for (int32_t j = 0; j < n; ++j) {
      const uint8_t* krow = ctx.cache.k_row(op.kv_layer, page, j);
      float dot = 0.f;
      if constexpr (kF16) {
        const uint16_t* k = reinterpret_cast<const uint16_t*>(krow) + int64_t(kvh) * dk;
        for (int32_t i = 0; i < dk; ++i) dot += q[i] * f16[k[i]];
      } else {
        const float* k = reinterpret_cast<const float*>(krow) + int64_t(kvh) * dk;
        for (int32_t i = 0; i < dk; ++i) dot += q[i] * k[i];
      }
      s[j] = dot * op.scale;
      block_max = std::max(block_max, s[j]);
    }
    if (block_max > m) {
      const float c = std::exp(m - block_max);  // 0 on the first page
      l *= c;
      for (int32_t i = 0; i < dv; ++i) acc[i] *= c;
      m = block_max;
    }
    for (int32_t j = 0; j < n; ++j) {
      const float w = std::exp(s[j] - m);
      l += w;
      const uint8_t* vrow = ctx.cache.v_row(op.kv_layer, page, j);
      if constexpr (kF16) {
        const uint16_t* v = reinterpret_cast<const uint16_t*>(vrow) + int64_t(kvh) * dv;
        for (int32_t i = 0; i < dv; ++i) acc[i] += w * f16[v[i]];
      } else {
        const float* v = reinterpret_cast<const float*>(vrow) + int64_t(kvh) * dv;
        for (int32_t i = 0; i < dv; ++i) acc[i] += w * v[i];
      }
    }
  }
  float* out = ctx.f32(op.out) + t * ctx.buf(op.out).cols + int64_t(head) * dv;
  const float inv = 1.f / l;
  if (op.gate.valid()) {
    const float* g =
        ctx.f32(op.gate) + t * ctx.buf(op.gate).cols + op.gate_heads.offset + int64_t(head) * op.gate_heads.head_stride;
    for (int32_t i = 0; i < dv; ++i) out[i] = acc[i] * inv * sigmoid(g[i]);
  } else {
    for (int32_t i = 0; i < dv; ++i) out[i] = acc[i] * inv;
  }
}

}  // namespace

void run(const graph::Attention& op, const OpContext& ctx) {
  const auto& kv = ctx.graph.state().kv_layers[size_t(op.kv_layer)];
  ZINC_CHECK(kv.head_dim_v <= kMaxHeadDim);
  const int64_t n_tokens = int64_t(ctx.batch.tokens.size());
  const int32_t n_heads = op.q_heads.n_heads;
  const bool f16 = ctx.cache.type() == kv::KvType::kF16;
  const float* table = fp16_table();
  parallel_for(ctx.pool, n_tokens * n_heads, 1, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      if (f16)
        attend_one<true>(op, ctx, i / n_heads, int32_t(i % n_heads), table);
      else
        attend_one<false>(op, ctx, i / n_heads, int32_t(i % n_heads), table);
    }
  });
}

}  // namespace zinc::cpu::ops
