// matmul: y = W x (+ bias) through cpu::matmul, or the fused SwiGLU gate/up pair; matmuls of one
// input (q/k/v) in one dispatch that quantizes the input once.
#include "core/check.h"
#include "cpu/matmul.h"
#include "cpu/ops/ops.h"

namespace zinc::cpu::ops {

size_t scratch_bytes(const graph::Matmul& op, const graph::Graph& g) {
  return op.up ? size_t(g.buffer(op.out).n_elements()) * 4 : 0;
}

namespace {

void add_bias(const graph::Matmul& op, int64_t n_tokens, float* out) {
  if (!op.bias) return;
  const int64_t n_out = op.w->rows();
  const float* b = op.bias->f32();
  for (int64_t t = 0; t < n_tokens; ++t)
    for (int64_t i = 0; i < n_out; ++i) out[t * n_out + i] += b[i];
}

}  // namespace

void run(const graph::Matmul& op, const OpContext& ctx) {
  const int64_t rows = ctx.buf(op.in).rows, n_out = op.w->rows();
  float* out = ctx.f32(op.out);
  MatmulInput& input = ctx.matmul_input;
  input.reset(ctx.f32(op.in), rows, op.w->cols());
  if (!op.up) {
    matmul(weight_view(*op.w), input, out, ctx.pool);
    add_bias(op, rows, out);
    return;
  }
  // Gate and up in one dispatch over one quantized input, then out = silu(gate + bias) * up.
  float* up = reinterpret_cast<float*>(ctx.scratch.data());
  const MatmulOutput outs[2] = {{weight_view(*op.w), out}, {weight_view(*op.up), up}};
  matmul_many(outs, 2, input, ctx.pool);
  add_bias(op, rows, out);
  const int64_t n = rows * n_out;
  parallel_for(ctx.pool, n, 4096, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) out[i] = silu(out[i]) * up[i];
  });
}

bool can_share_input(const graph::Matmul& a, const graph::Matmul& b) {
  return a.in == b.in && !a.up && !b.up && a.w->cols() == b.w->cols();
}

void run_group(std::span<const graph::Matmul* const> ops, const OpContext& ctx) {
  constexpr size_t kMaxGroup = 8;
  ZINC_CHECK(!ops.empty() && ops.size() <= kMaxGroup);
  const graph::Matmul& first = *ops[0];
  const int64_t rows = ctx.buf(first.in).rows;
  MatmulInput& input = ctx.matmul_input;
  input.reset(ctx.f32(first.in), rows, first.w->cols());
  MatmulOutput outs[kMaxGroup];
  for (size_t i = 0; i < ops.size(); ++i) {
    ZINC_CHECK(can_share_input(first, *ops[i]) || ops.size() == 1);
    outs[i] = {weight_view(*ops[i]->w), ctx.f32(ops[i]->out)};
  }
  matmul_many(outs, int(ops.size()), input, ctx.pool);
  for (const graph::Matmul* op : ops) add_bias(*op, rows, ctx.f32(op->out));
}

}  // namespace zinc::cpu::ops
