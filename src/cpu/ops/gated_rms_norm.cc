// gated_rms_norm: per group, rmsnorm(x) * weight * silu(gate).
#include "cpu/ops/ops.h"

namespace zinc::cpu::ops {

void run(const graph::GatedRmsNorm& op, const OpContext& ctx) {
  const graph::Buffer& b = ctx.buf(op.in);
  const int64_t n = b.cols, groups = n / op.group;
  const float* in = ctx.f32(op.in);
  const float* gate = ctx.f32(op.gate);
  float* out = ctx.f32(op.out);
  const float* w = op.weight->f32();
  parallel_for(ctx.pool, b.rows * groups, 4, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      const int64_t base = i * op.group;  // rows are contiguous, so group i starts here
      const float scale = rms_scale(in + base, op.group, op.eps);
      for (int32_t c = 0; c < op.group; ++c)
        out[base + c] = ((in[base + c] * scale) * w[c]) * silu(gate[base + c]);
    }
  });
}

}  // namespace zinc::cpu::ops
