#include "vulkan/ops/shared_expert_gate.h"

namespace zinc::vulkan::ops {
namespace {
struct Push {
  uint32_t n, m, x_stride, stride, flags;
};
}  // namespace

SharedExpertGate::~SharedExpertGate() = default;

Result<std::unique_ptr<SharedExpertGate>> SharedExpertGate::create(const Device& device, bool use_subgroups) {
  const Reduction red = reduction_for(device.caps(), use_subgroups);
  std::unique_ptr<SharedExpertGate> op(new SharedExpertGate());
  ZINC_ASSIGN_OR_RETURN(op->pipeline_, make_pipeline(device, "shared_expert_gate" + red.suffix, 4, sizeof(Push),
                                                     {red.group_size, red.min_subgroup_size}));
  return op;
}

Status SharedExpertGate::record(Commands& cmd, const Activations& x, const BufferRange& gate,
                                const Activations& shared, const Activations& out, uint32_t n_tokens, uint32_t n,
                                uint32_t m, bool overwrite) const {
  if (x.stride < n || shared.stride != out.stride || out.stride < m)
    return error("shared_expert_gate: x stride %u (width %u), shared/out strides %u/%u (width %u)", x.stride, n,
                 shared.stride, out.stride, m);
  if (n_tokens == 0) return Status();
  const Push push{n, m, x.stride, out.stride, overwrite ? 1u : 0u};
  const BufferRange buffers[4] = {x.range, gate, shared.range, out.range};
  const Grid grid = grid_for(n_tokens);
  cmd.dispatch(*pipeline_, buffers, &push, sizeof push, grid.x, grid.y);
  return Status();
}

}  // namespace zinc::vulkan::ops
