// embed: row gather + dequantization of the token embedding table.
#include "core/check.h"
#include "core/quant.h"
#include "cpu/ops/ops.h"

namespace zinc::cpu::ops {

void run(const graph::Embed& op, const OpContext& ctx) {
  const graph::Weight& table = *op.table;
  const int64_t n_embd = table.cols();
  float* out = ctx.f32(op.out);
  const auto tokens = ctx.batch.tokens;
  parallel_for(ctx.pool, int64_t(tokens.size()), 8, [&](int64_t begin, int64_t end) {
    for (int64_t t = begin; t < end; ++t) {
      const int32_t id = tokens[size_t(t)];
      ZINC_DCHECK(id >= 0 && id < table.rows());
      float* row = out + t * n_embd;
      dequantize_row(table.type, static_cast<const uint8_t*>(table.data) + size_t(id) * table.row_bytes, row, n_embd);
      if (op.scale != 1.f)
        for (int64_t i = 0; i < n_embd; ++i) row[i] *= op.scale;
    }
  });
}

}  // namespace zinc::cpu::ops
