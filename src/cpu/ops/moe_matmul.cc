// moe_matmul: expert-indexed products. Rows are grouped by expert, gathered into a contiguous
// block and multiplied by that expert's matrix through cpu::matmul, then scattered back; the down
// projection sums the k expert outputs of a token in slot order.
#include <cstring>

#include "cpu/matmul.h"
#include "cpu/ops/ops.h"

namespace zinc::cpu::ops {
namespace {

struct Scratch {
  int32_t* count;  // [n_expert]
  int32_t* start;  // [n_expert + 1]
  int32_t* order;  // [T*k] slot indices r = t*k + j grouped by expert
  int32_t* pos_of; // [T*k] inverse of order: where slot r sits in the grouped rows
  float* x;        // [T*k, cols] gathered inputs
  float* y;        // [T*k, rows] expert outputs, by slot
  float* u;        // [T*k, rows] up outputs (gate/up only)
};

size_t align(size_t n) { return (n + 63) / 64 * 64; }

Scratch carve(uint8_t* p, int64_t n_expert, int64_t slots, int64_t cols, int64_t rows) {
  Scratch s;
  s.count = reinterpret_cast<int32_t*>(p);
  p += align(size_t(n_expert) * 4);
  s.start = reinterpret_cast<int32_t*>(p);
  p += align(size_t(n_expert + 1) * 4);
  s.order = reinterpret_cast<int32_t*>(p);
  p += align(size_t(slots) * 4);
  s.pos_of = reinterpret_cast<int32_t*>(p);
  p += align(size_t(slots) * 4);
  s.x = reinterpret_cast<float*>(p);
  p += align(size_t(slots * cols) * 4);
  s.y = reinterpret_cast<float*>(p);
  p += align(size_t(slots * rows) * 4);
  s.u = reinterpret_cast<float*>(p);
  return s;
}

}  // namespace

size_t scratch_bytes(const graph::MoeMatmul& op, const graph::Graph& g) {
  const graph::Buffer& ids = g.buffer(op.ids);
  const int64_t slots = ids.rows * ids.cols, n_expert = op.w->ne[2];
  return align(size_t(n_expert) * 4) + align(size_t(n_expert + 1) * 4) + 2 * align(size_t(slots) * 4) +
         align(size_t(slots * op.w->cols()) * 4) + 2 * align(size_t(slots * op.w->rows()) * 4);
}

void run(const graph::MoeMatmul& op, const OpContext& ctx) {
  const graph::Buffer& idb = ctx.buf(op.ids);
  const int64_t T = idb.rows, k = idb.cols, slots = T * k;
  const int64_t n_expert = op.w->ne[2], cols = op.w->cols(), rows = op.w->rows();
  const int32_t* ids = ctx.i32(op.ids);
  const float* in = ctx.f32(op.in);
  Scratch s = carve(ctx.scratch.data(), n_expert, slots, cols, rows);

  // Group slots by expert (counting sort keeps slot order within an expert).
  std::memset(s.count, 0, size_t(n_expert) * 4);
  for (int64_t r = 0; r < slots; ++r) s.count[ids[r]]++;
  s.start[0] = 0;
  for (int64_t e = 0; e < n_expert; ++e) s.start[e + 1] = s.start[e] + s.count[e];
  for (int64_t e = 0; e < n_expert; ++e) s.count[e] = 0;
  for (int64_t r = 0; r < slots; ++r) {
    const int32_t e = ids[r];
    s.order[s.start[e] + s.count[e]++] = int32_t(r);
  }

  const bool gate_up = op.up != nullptr;
  for (int64_t e = 0; e < n_expert; ++e) {
    const int64_t n = s.count[e];
    if (n == 0) continue;
    const int32_t* group = s.order + s.start[e];
    for (int64_t i = 0; i < n; ++i) {
      const int64_t src_row = gate_up ? group[i] / k : group[i];
      std::memcpy(s.x + i * cols, in + src_row * cols, size_t(cols) * 4);
    }
    float* y = s.y + int64_t(s.start[e]) * rows;
    matmul(weight_view(*op.w, e), s.x, n, y, ctx.pool);
    if (gate_up) {
      float* u = s.u + int64_t(s.start[e]) * rows;
      matmul(weight_view(*op.up, e), s.x, n, u, ctx.pool);
      float* out = ctx.f32(op.out);
      for (int64_t i = 0; i < n; ++i) {
        float* o = out + int64_t(group[i]) * rows;
        for (int64_t c = 0; c < rows; ++c) o[c] = silu(y[i * rows + c]) * u[i * rows + c];
      }
    }
  }
  if (gate_up) return;

  // Down: out[t] = sum_j w[t][j] * y(slot t*k+j), in slot order.
  int32_t* pos_of = s.pos_of;
  for (int64_t i = 0; i < slots; ++i) pos_of[s.order[i]] = int32_t(i);
  const float* w = ctx.f32(op.weights);
  float* out = ctx.f32(op.out);
  parallel_for(ctx.pool, T, 1, [&](int64_t begin, int64_t end) {
    for (int64_t t = begin; t < end; ++t) {
      float* o = out + t * rows;
      for (int64_t j = 0; j < k; ++j) {
        const float wt = w[t * k + j];
        const float* y = s.y + int64_t(pos_of[t * k + j]) * rows;
        if (j == 0)
          for (int64_t c = 0; c < rows; ++c) o[c] = y[c] * wt;
        else
          for (int64_t c = 0; c < rows; ++c) o[c] += y[c] * wt;
      }
    }
  });
}

}  // namespace zinc::cpu::ops
