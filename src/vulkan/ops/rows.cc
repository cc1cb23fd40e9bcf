#include "vulkan/ops/rows.h"

namespace zinc::vulkan::ops {

AddBias::~AddBias() = default;

Result<std::unique_ptr<AddBias>> AddBias::create(const Device& device) {
  std::unique_ptr<AddBias> op(new AddBias());
  ZINC_ASSIGN_OR_RETURN(op->pipeline_, make_pipeline(device, "add_bias", 2, 12, {}));
  return op;
}

Status AddBias::record(Commands& cmd, const Activations& y, const BufferRange& bias, uint32_t cols,
                       uint32_t n_tokens) const {
  if (y.stride < cols) return error("add_bias: stride %u is less than cols %u", y.stride, cols);
  const uint64_t n = uint64_t(cols) * n_tokens;
  if (n == 0) return Status();
  if (n > 0xFFFFFFFFull) return error("add_bias: %llu elements exceed one dispatch", (unsigned long long)n);
  const uint32_t push[3] = {cols, y.stride, n_tokens};
  const BufferRange buffers[2] = {y.range, bias};
  const Grid grid = grid_for(uint32_t((n + 255) / 256));
  cmd.dispatch(*pipeline_, buffers, push, sizeof push, grid.x, grid.y);
  return Status();
}

GatherRows::~GatherRows() = default;

Result<std::unique_ptr<GatherRows>> GatherRows::create(const Device& device) {
  std::unique_ptr<GatherRows> op(new GatherRows());
  ZINC_ASSIGN_OR_RETURN(op->pipeline_, make_pipeline(device, "gather_rows", 3, 8, {}));
  return op;
}

Status GatherRows::record(Commands& cmd, const BufferRange& in, const BufferRange& rows, uint32_t rows_offset,
                          const BufferRange& out, uint32_t cols, uint32_t n_rows) const {
  if (n_rows == 0) return Status();
  const uint32_t push[2] = {cols, rows_offset};
  const BufferRange buffers[3] = {in, rows, out};
  const Grid grid = grid_for(n_rows);
  cmd.dispatch(*pipeline_, buffers, push, sizeof push, grid.x, grid.y);
  return Status();
}

}  // namespace zinc::vulkan::ops
