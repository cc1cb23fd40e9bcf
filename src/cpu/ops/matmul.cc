// matmul: y = W x (+ bias) through cpu::matmul, or the fused SwiGLU gate/up pair.
#include "cpu/matmul.h"
#include "cpu/ops/ops.h"

namespace zinc::cpu::ops {

size_t scratch_bytes(const graph::Matmul& op, const graph::Graph& g) {
  return op.up ? size_t(g.buffer(op.out).n_elements()) * 4 : 0;
}

void run(const graph::Matmul& op, const OpContext& ctx) {
  const int64_t rows = ctx.buf(op.in).rows, n_out = op.w->rows();
  float* out = ctx.f32(op.out);
  matmul(weight_view(*op.w), ctx.f32(op.in), rows, out, ctx.pool);
  if (op.bias) {
    const float* b = op.bias->f32();
    for (int64_t t = 0; t < rows; ++t)
      for (int64_t i = 0; i < n_out; ++i) out[t * n_out + i] += b[i];
  }
  if (op.up) {
    float* up = reinterpret_cast<float*>(ctx.scratch.data());
    matmul(weight_view(*op.up), ctx.f32(op.in), rows, up, ctx.pool);
    const int64_t n = rows * n_out;
    parallel_for(ctx.pool, n, 4096, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) out[i] = silu(out[i]) * up[i];
    });
  }
}

}  // namespace zinc::cpu::ops
