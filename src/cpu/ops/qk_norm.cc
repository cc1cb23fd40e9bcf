// qk_norm: RMS norm of every head in place, with a per-head-dim weight.
#include "cpu/ops/ops.h"

namespace zinc::cpu::ops {

void run(const graph::QkNorm& op, const OpContext& ctx) {
  const graph::Buffer& b = ctx.buf(op.buf);
  float* data = ctx.f32(op.buf);
  const float* w = op.weight->f32();
  const auto h = op.heads;
  parallel_for(ctx.pool, b.rows, 4, [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r)
      for (int32_t head = 0; head < h.n_heads; ++head) {
        float* x = data + r * b.cols + h.offset + int64_t(head) * h.head_stride;
        const float scale = rms_scale(x, h.head_dim, op.eps);
        for (int32_t i = 0; i < h.head_dim; ++i) x[i] = (x[i] * scale) * w[i];
      }
  });
}

}  // namespace zinc::cpu::ops
