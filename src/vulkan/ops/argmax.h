// Greedy sampling on the device: out[t] = the index of the largest x[t][k], k < cols (the
// first on ties; NaN never wins), as uint32. One workgroup per row; no barrier added.
#pragma once

#include <memory>

#include "vulkan/ops/op_util.h"

namespace zinc::vulkan::ops {

class Argmax {
 public:
  static Result<std::unique_ptr<Argmax>> create(const Device& device, bool use_subgroups = true);
  ~Argmax();
  Status record(Commands& cmd, const Activations& x, const BufferRange& out, uint32_t n_tokens, uint32_t cols) const;

 private:
  Argmax() = default;
  std::unique_ptr<Pipeline> pipeline_;
};

}  // namespace zinc::vulkan::ops
