// gather_rows: output-row selection.
#include <cstring>

#include "cpu/ops/ops.h"

namespace zinc::cpu::ops {

void run(const graph::GatherRows& op, const OpContext& ctx) {
  const int64_t n = ctx.buf(op.in).cols;
  const float* in = ctx.f32(op.in);
  float* out = ctx.f32(op.out);
  const auto rows = ctx.batch.output_rows;
  for (size_t i = 0; i < rows.size(); ++i) std::memcpy(out + int64_t(i) * n, in + int64_t(rows[i]) * n, size_t(n) * 4);
}

}  // namespace zinc::cpu::ops
