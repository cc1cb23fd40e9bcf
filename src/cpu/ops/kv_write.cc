// kv_write: stores each token's K and V heads in the paged cache at (sequence, position).
#include "core/fp16.h"
#include "cpu/ops/ops.h"

namespace zinc::cpu::ops {
namespace {

void store(const float* row, const graph::HeadLayout& h, uint8_t* dst, kv::KvType type) {
  for (int32_t head = 0; head < h.n_heads; ++head) {
    const float* src = row + h.offset + int64_t(head) * h.head_stride;
    const int64_t base = int64_t(head) * h.head_dim;
    if (type == kv::KvType::kF16) {
      uint16_t* d = reinterpret_cast<uint16_t*>(dst) + base;
      for (int32_t i = 0; i < h.head_dim; ++i) d[i] = f32_to_fp16(src[i]);
    } else {
      float* d = reinterpret_cast<float*>(dst) + base;
      for (int32_t i = 0; i < h.head_dim; ++i) d[i] = src[i];
    }
  }
}

}  // namespace

void run(const graph::KvWrite& op, const OpContext& ctx) {
  const float* k = ctx.f32(op.k);
  const float* v = ctx.f32(op.v);
  const int64_t k_cols = ctx.buf(op.k).cols, v_cols = ctx.buf(op.v).cols;
  const auto& b = ctx.batch;
  const kv::KvType type = ctx.cache.type();
  parallel_for(ctx.pool, int64_t(b.tokens.size()), 4, [&](int64_t begin, int64_t end) {
    for (int64_t t = begin; t < end; ++t) {
      const kv::SeqId seq = b.seq_ids[size_t(t)];
      const int64_t pos = b.positions[size_t(t)];
      store(k + t * k_cols, op.k_heads, ctx.cache.k_at(op.kv_layer, seq, pos), type);
      store(v + t * v_cols, op.v_heads, ctx.cache.v_at(op.kv_layer, seq, pos), type);
    }
  });
}

}  // namespace zinc::cpu::ops
