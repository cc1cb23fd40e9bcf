// Gated RMSNorm (graph::GatedRmsNorm): per group of `group` elements of each token,
// out = rmsnorm(in; weight [group], eps) * silu(gate). One subgroup per (token, group) where the
// device has subgroup arithmetic, else one workgroup; no barrier added.
#pragma once

#include <memory>

#include "vulkan/ops/op_util.h"

namespace zinc::vulkan::ops {

class GatedRmsNorm {
 public:
  static Result<std::unique_ptr<GatedRmsNorm>> create(const Device& device, bool use_subgroups = true);
  ~GatedRmsNorm();
  // in, gate and out share one stride; cols is a multiple of group.
  Status record(Commands& cmd, const Activations& in, const Activations& gate, const BufferRange& weight,
                const Activations& out, uint32_t n_tokens, uint32_t cols, uint32_t group, float eps) const;

 private:
  GatedRmsNorm() = default;
  std::unique_ptr<Pipeline> pipeline_;
  uint32_t groups_per_workgroup_ = 1;  // (token, group) pairs: one, or one per subgroup
};

}  // namespace zinc::vulkan::ops
