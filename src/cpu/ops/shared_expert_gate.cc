// shared_expert_gate: out += sigmoid(gate . x) * shared, per token.
#include "cpu/ops/ops.h"

namespace zinc::cpu::ops {

void run(const graph::SharedExpertGate& op, const OpContext& ctx) {
  const graph::Buffer& xb = ctx.buf(op.x);
  const int64_t n = xb.cols, m = ctx.buf(op.out).cols;
  const float* x = ctx.f32(op.x);
  const float* s = ctx.f32(op.shared);
  float* out = ctx.f32(op.out);
  const float* gate = op.gate->f32();
  parallel_for(ctx.pool, xb.rows, 1, [&](int64_t begin, int64_t end) {
    for (int64_t t = begin; t < end; ++t) {
      float dot = 0.f;
      for (int64_t i = 0; i < n; ++i) dot += gate[i] * x[t * n + i];
      const float g = sigmoid(dot);
      for (int64_t i = 0; i < m; ++i) out[t * m + i] += s[t * m + i] * g;
    }
  });
}

}  // namespace zinc::cpu::ops
