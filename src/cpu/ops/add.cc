// add: element-wise sum.
#include "cpu/ops/ops.h"

namespace zinc::cpu::ops {

void run(const graph::Add& op, const OpContext& ctx) {
  const int64_t n = ctx.buf(op.a).n_elements();
  const float* a = ctx.f32(op.a);
  const float* b = ctx.f32(op.b);
  float* out = ctx.f32(op.out);
  parallel_for(ctx.pool, n, 4096, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) out[i] = a[i] + b[i];
  });
}

}  // namespace zinc::cpu::ops
