// Embedding lookup on the device: out[t] = row ids[ids_offset + t] of a weight matrix,
// dequantized to float32 and times `scale`, for t < n_tokens (ids: uint32 on the device, e.g.
// written by Argmax; ids_offset in words from the start of the range). No barrier added.
#pragma once

#include <memory>

#include "vulkan/ops/op_util.h"
#include "vulkan/weights.h"

namespace zinc::vulkan::ops {

class GetRows {
 public:
  static Result<std::unique_ptr<GetRows>> create(const Device& device, TensorType type);
  ~GetRows();
  // out: n_tokens rows of w.cols() floats at out.stride (a multiple of 4). Ids out of range
  // leave their row untouched.
  Status record(Commands& cmd, const WeightBuffer& w, const BufferRange& ids, const Activations& out,
                uint32_t n_tokens, uint32_t ids_offset = 0, float scale = 1.f) const;

 private:
  GetRows() = default;
  TensorType type_ = TensorType::F32;
  std::unique_ptr<Pipeline> pipeline_;
};

}  // namespace zinc::vulkan::ops
