#include "vulkan/ops/elementwise.h"

#include <algorithm>

namespace zinc::vulkan::ops {

Elementwise::~Elementwise() = default;

Result<std::unique_ptr<Elementwise>> Elementwise::create(const Device& device, ElementwiseOp op) {
  std::unique_ptr<Elementwise> e(new Elementwise());
  ZINC_ASSIGN_OR_RETURN(e->pipeline_, make_pipeline(device, "elementwise", 3, 4, {uint32_t(op)}));
  return e;
}

Status Elementwise::record(Commands& cmd, const BufferRange& a, const BufferRange& b, const BufferRange& c,
                           uint32_t n) const {
  const BufferRange buffers[3] = {a, b, c};
  // Enough workgroups to fill a large GPU; each thread then strides over the rest.
  const Grid grid = grid_for(std::min<uint32_t>((n + 255) / 256, 4096));
  cmd.dispatch(*pipeline_, buffers, &n, 4, grid.x, grid.y);
  return Status();
}

}  // namespace zinc::vulkan::ops
