// attention: causal GQA over the paged cache with an online softmax (running max and sum, page by
// page) so no score buffer is needed; optional sigmoid output gate. f16 K/V: one task per (block
// of tokens, KV head) runs every query head of the group for every token of the block against
// each page while it is in L1, with the vector kernels of cpu/kernels; f32 K/V: one scalar task
// per (token, query head).
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "core/check.h"
#include "cpu/kernels/kernel_table.h"
#include "cpu/ops/ops.h"

namespace zinc::cpu::ops {

namespace {

constexpr int kMaxHeadDim = 1024;
constexpr int64_t kTokenBlock = 16;  // tokens whose queries share each page read

// The gate (if any) and 1/l, applied to one head's accumulator.
void finish_head(const graph::Attention& op, const OpContext& ctx, int64_t t, int32_t head, int32_t dv,
                 const float* acc, float l) {
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

struct BlockState {
  std::vector<float> acc, m, l;  // per (token of the block, head of the group)
};

// Tokens [t0, t1) and the query heads of KV head kvh, f16 K/V.
void attend_block_f16(const graph::Attention& op, const OpContext& ctx, const kernels::KernelTable& kt, int64_t t0,
                      int64_t t1, int32_t kvh) {
  const auto& kv = ctx.graph.state().kv_layers[size_t(op.kv_layer)];
  const int32_t dk = kv.head_dim_k, dv = kv.head_dim_v;
  const int32_t group = op.q_heads.n_heads / kv.n_head_kv;
  const int64_t n_rows = (t1 - t0) * group;
  thread_local BlockState st;
  if (st.acc.size() < size_t(n_rows * dv)) st.acc.resize(size_t(n_rows * dv));
  if (st.m.size() < size_t(n_rows)) {
    st.m.resize(size_t(n_rows));
    st.l.resize(size_t(n_rows));
  }
  std::fill_n(st.acc.begin(), n_rows * dv, 0.f);
  std::fill_n(st.m.begin(), n_rows, -std::numeric_limits<float>::infinity());
  std::fill_n(st.l.begin(), n_rows, 0.f);
  int64_t max_pos = 0;
  for (int64_t t = t0; t < t1; ++t) max_pos = std::max<int64_t>(max_pos, ctx.batch.positions[size_t(t)]);
  const uint8_t* k_base = ctx.cache.k_row(op.kv_layer, 0, 0);
  const uint8_t* v_base = ctx.cache.v_row(op.kv_layer, 0, 0);
  const size_t k_stride = size_t(ctx.cache.k_row(op.kv_layer, 0, 1) - k_base);
  const size_t v_stride = size_t(ctx.cache.v_row(op.kv_layer, 0, 1) - v_base);
  const int64_t q_cols = ctx.buf(op.q).cols;
  const float* q_all = ctx.f32(op.q);
  for (int64_t first = 0; first <= max_pos; first += kv::kPageTokens) {
    for (int64_t t = t0; t < t1; ++t) {
      const int64_t pos = ctx.batch.positions[size_t(t)];
      if (first > pos) continue;
      const int32_t page = ctx.cache.page_table(ctx.batch.seq_ids[size_t(t)])[size_t(first / kv::kPageTokens)];
      const int n = int(std::min<int64_t>(kv::kPageTokens, pos + 1 - first));
      const uint8_t* krows = ctx.cache.k_row(op.kv_layer, page, 0) + size_t(kvh) * size_t(dk) * 2;
      const uint8_t* vrows = ctx.cache.v_row(op.kv_layer, page, 0) + size_t(kvh) * size_t(dv) * 2;
      for (int32_t h = 0; h < group; ++h) {
        const int32_t head = kvh * group + h;
        const int64_t row = (t - t0) * group + h;
        const float* q = q_all + t * q_cols + op.q_heads.offset + int64_t(head) * op.q_heads.head_stride;
        float s[kv::kPageTokens];
        kt.f16_dot_rows(q, krows, k_stride, n, dk, op.scale, s);
        float block_max = s[0];
        for (int j = 1; j < n; ++j) block_max = std::max(block_max, s[j]);
        float& m = st.m[size_t(row)];
        float& l = st.l[size_t(row)];
        float* acc = st.acc.data() + row * dv;
        if (block_max > m) {
          const float c = std::exp(m - block_max);  // 0 on the first page
          l *= c;
          for (int32_t i = 0; i < dv; ++i) acc[i] *= c;
          m = block_max;
        }
        l += kt.exp_shift_sum(s, n, m);
        kt.f16_axpy_rows(s, vrows, v_stride, n, dv, acc);
      }
    }
  }
  for (int64_t t = t0; t < t1; ++t)
    for (int32_t h = 0; h < group; ++h) {
      const int64_t row = (t - t0) * group + h;
      finish_head(op, ctx, t, kvh * group + h, dv, st.acc.data() + row * dv, st.l[size_t(row)]);
    }
}

// One (token, query head), f32 K/V.
void attend_one_f32(const graph::Attention& op, const OpContext& ctx, int64_t t, int32_t head) {
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
      const float* k = reinterpret_cast<const float*>(ctx.cache.k_row(op.kv_layer, page, j)) + int64_t(kvh) * dk;
      float dot = 0.f;
      for (int32_t i = 0; i < dk; ++i) dot += q[i] * k[i];
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
      const float* v = reinterpret_cast<const float*>(ctx.cache.v_row(op.kv_layer, page, j)) + int64_t(kvh) * dv;
      for (int32_t i = 0; i < dv; ++i) acc[i] += w * v[i];
    }
  }
  finish_head(op, ctx, t, head, dv, acc, l);
}

}  // namespace

void run(const graph::Attention& op, const OpContext& ctx) {
  const auto& kv = ctx.graph.state().kv_layers[size_t(op.kv_layer)];
  ZINC_CHECK(kv.head_dim_v <= kMaxHeadDim);
  const int64_t n_tokens = int64_t(ctx.batch.tokens.size());
  const int32_t n_heads = op.q_heads.n_heads;
  if (ctx.cache.type() == kv::KvType::kF16) {
    const kernels::KernelTable& kt = *kernels::kernel_table(best_isa());
    const int64_t n_kv = kv.n_head_kv, n_blocks = (n_tokens + kTokenBlock - 1) / kTokenBlock;
    // Later blocks see more keys: hand them out first.
    ctx.pool.parallel_items(n_blocks * n_kv, [&](int64_t i) {
      const int64_t block = n_blocks - 1 - i / n_kv;
      attend_block_f16(op, ctx, kt, block * kTokenBlock, std::min(n_tokens, (block + 1) * kTokenBlock),
                       int32_t(i % n_kv));
    });
    return;
  }
  parallel_for(ctx.pool, n_tokens * n_heads, 1, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) attend_one_f32(op, ctx, i / n_heads, int32_t(i % n_heads));
  });
}

}  // namespace zinc::cpu::ops
