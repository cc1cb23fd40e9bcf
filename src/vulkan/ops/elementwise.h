// Elementwise ops on n floats: c = a + b, c = silu(a) * b (SwiGLU after the prefill GEMMs),
// c = a * b. c may be a or b. No barrier added.
#pragma once

#include <memory>

#include "vulkan/ops/op_util.h"

namespace zinc::vulkan::ops {

enum class ElementwiseOp : uint32_t { kAdd = 0, kSwiglu = 1, kMul = 2 };

class Elementwise {
 public:
  static Result<std::unique_ptr<Elementwise>> create(const Device& device, ElementwiseOp op);
  ~Elementwise();
  Status record(Commands& cmd, const BufferRange& a, const BufferRange& b, const BufferRange& c, uint32_t n) const;

 private:
  Elementwise() = default;
  std::unique_ptr<Pipeline> pipeline_;
};

}  // namespace zinc::vulkan::ops
