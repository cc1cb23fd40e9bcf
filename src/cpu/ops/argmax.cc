// argmax: index of the largest value per row (lowest index on ties).
#include "cpu/ops/ops.h"

namespace zinc::cpu::ops {

void run(const graph::Argmax& op, const OpContext& ctx) {
  const graph::Buffer& b = ctx.buf(op.in);
  const float* in = ctx.f32(op.in);
  int32_t* out = ctx.i32(op.out);
  for (int64_t r = 0; r < b.rows; ++r) {
    const float* row = in + r * b.cols;
    int64_t best = 0;
    for (int64_t i = 1; i < b.cols; ++i)
      if (row[i] > row[best]) best = i;
    out[r] = int32_t(best);
  }
}

}  // namespace zinc::cpu::ops
