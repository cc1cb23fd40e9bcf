// Per-head RMS norm in place (graph::QkNorm): x = x / sqrt(mean(x^2) + eps) * weight for every
// head of a row. One workgroup per (head, row); no barrier added.
#pragma once

#include <memory>

#include "graph/ops.h"
#include "vulkan/ops/op_util.h"

namespace zinc::vulkan::ops {

class QkNorm {
 public:
  static Result<std::unique_ptr<QkNorm>> create(const Device& device, bool use_subgroups = true);
  ~QkNorm();
  // weight: heads.head_dim floats.
  Status record(Commands& cmd, const Activations& x, const graph::HeadLayout& heads, const BufferRange& weight,
                uint32_t n_tokens, float eps) const;

 private:
  QkNorm() = default;
  std::unique_ptr<Pipeline> pipeline_;
};

}  // namespace zinc::vulkan::ops
