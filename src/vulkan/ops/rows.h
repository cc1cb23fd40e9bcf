// Row-wise helpers of the executor: AddBias (y[t] += bias, the Matmul bias) and GatherRows
// (out[i] = in[rows[i]], output-row selection with the row ids in the step buffer). No barrier added.
#pragma once

#include <memory>

#include "vulkan/ops/op_util.h"

namespace zinc::vulkan::ops {

class AddBias {
 public:
  static Result<std::unique_ptr<AddBias>> create(const Device& device);
  ~AddBias();
  Status record(Commands& cmd, const Activations& y, const BufferRange& bias, uint32_t cols, uint32_t n_tokens) const;

 private:
  AddBias() = default;
  std::unique_ptr<Pipeline> pipeline_;
};

class GatherRows {
 public:
  static Result<std::unique_ptr<GatherRows>> create(const Device& device);
  ~GatherRows();
  // in, out: contiguous rows of `cols` floats; rows: int32 row ids at word rows_offset.
  Status record(Commands& cmd, const BufferRange& in, const BufferRange& rows, uint32_t rows_offset,
                const BufferRange& out, uint32_t cols, uint32_t n_rows) const;

 private:
  GatherRows() = default;
  std::unique_ptr<Pipeline> pipeline_;
};

}  // namespace zinc::vulkan::ops
