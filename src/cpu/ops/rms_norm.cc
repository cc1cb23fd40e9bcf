// rms_norm with optional fused residual add and weight.
#include "cpu/ops/ops.h"

namespace zinc::cpu::ops {

void run(const graph::RmsNorm& op, const OpContext& ctx) {
  const graph::Buffer& b = ctx.buf(op.in);
  const int64_t n = b.cols;
  float* x = ctx.f32(op.in);
  const float* add = ctx.f32(op.add);
  float* out = ctx.f32(op.out);
  const float* w = op.weight ? op.weight->f32() : nullptr;
  parallel_for(ctx.pool, b.rows, 4, [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      float* xr = x + r * n;
      if (add)
        for (int64_t i = 0; i < n; ++i) xr[i] += add[r * n + i];
      const float scale = rms_scale(xr, n, op.eps);
      float* yr = out + r * n;
      for (int64_t i = 0; i < n; ++i) {
        const float y = xr[i] * scale;
        yr[i] = w ? y * w[i] : y;
      }
    }
  });
}

}  // namespace zinc::cpu::ops
