// RMSNorm over rows: y[t] = x'[t] / sqrt(mean(x'[t]^2) + eps) * weight, where x' = x, or
// x + residual with x' also written to residual_out (the new residual; may be the residual's
// own range). One workgroup per token; no barrier added.
#pragma once

#include <memory>

#include "vulkan/ops/op_util.h"

namespace zinc::vulkan::ops {

class RmsNorm {
 public:
  static Result<std::unique_ptr<RmsNorm>> create(const Device& device, bool use_subgroups = true);
  ~RmsNorm();
  // x, y, residual and residual_out share one stride; weight holds `cols` floats.
  Status record(Commands& cmd, const Activations& x, const BufferRange& weight, const Activations& y,
                uint32_t n_tokens, uint32_t cols, float eps, const Activations* residual = nullptr,
                const Activations* residual_out = nullptr) const;

 private:
  RmsNorm() = default;
  std::unique_ptr<Pipeline> pipeline_;
};

}  // namespace zinc::vulkan::ops
