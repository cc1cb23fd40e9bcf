#include "vulkan/ops/rms_norm.h"

namespace zinc::vulkan::ops {
namespace {
struct Push {
  uint32_t cols, stride;
  float eps;
  uint32_t flags;
};
}  // namespace

RmsNorm::~RmsNorm() = default;

Result<std::unique_ptr<RmsNorm>> RmsNorm::create(const Device& device, bool use_subgroups) {
  const Reduction red = reduction_for(device.caps(), use_subgroups);
  std::unique_ptr<RmsNorm> op(new RmsNorm());
  ZINC_ASSIGN_OR_RETURN(op->pipeline_, make_pipeline(device, "rms_norm" + red.suffix, 5, sizeof(Push),
                                                     {red.group_size, red.min_subgroup_size}));
  return op;
}

Status RmsNorm::record(Commands& cmd, const Activations& x, const BufferRange& weight, const Activations& y,
                       uint32_t n_tokens, uint32_t cols, float eps, const Activations* residual,
                       const Activations* residual_out) const {
  if ((residual == nullptr) != (residual_out == nullptr))
    return error("rms_norm: a residual needs both its input and its output");
  if (y.stride != x.stride || (residual && (residual->stride != x.stride || residual_out->stride != x.stride)))
    return error("rms_norm: x, y and residual strides differ (%u, %u)", x.stride, y.stride);
  if (x.stride < cols) return error("rms_norm: stride %u is less than cols %u", x.stride, cols);
  const Push push{cols, x.stride, eps, residual ? 1u : 0u};
  const BufferRange buffers[5] = {x.range, residual ? residual->range : x.range, weight, y.range,
                                  residual ? residual_out->range : y.range};
  const Grid grid = grid_for(n_tokens);
  cmd.dispatch(*pipeline_, buffers, &push, sizeof push, grid.x, grid.y);
  return Status();
}

}  // namespace zinc::vulkan::ops
