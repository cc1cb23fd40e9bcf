#include "vulkan/ops/argmax.h"

namespace zinc::vulkan::ops {

Argmax::~Argmax() = default;

Result<std::unique_ptr<Argmax>> Argmax::create(const Device& device, bool use_subgroups) {
  const Reduction red = reduction_for(device.caps(), use_subgroups);
  std::unique_ptr<Argmax> a(new Argmax());
  ZINC_ASSIGN_OR_RETURN(a->pipeline_,
                        make_pipeline(device, "argmax" + red.suffix, 2, 8, {red.group_size, red.min_subgroup_size}));
  return a;
}

Status Argmax::record(Commands& cmd, const Activations& x, const BufferRange& out, uint32_t n_tokens,
                      uint32_t cols) const {
  if (x.stride < cols) return error("argmax: stride %u is less than cols %u", x.stride, cols);
  const uint32_t push[2] = {cols, x.stride};
  const BufferRange buffers[2] = {x.range, out};
  const Grid grid = grid_for(n_tokens);
  cmd.dispatch(*pipeline_, buffers, push, sizeof push, grid.x, grid.y);
  return Status();
}

}  // namespace zinc::vulkan::ops
