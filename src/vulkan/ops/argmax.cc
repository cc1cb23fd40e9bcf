#include "vulkan/ops/argmax.h"

#include <algorithm>

namespace zinc::vulkan::ops {
namespace {

constexpr uint32_t kUnroll = 8;          // columns per thread loaded at once (argmax.comp)
constexpr uint64_t kCounterBytes = 256;  // the counters' part of the scratch (offset alignment)

}  // namespace

Argmax::~Argmax() = default;

Result<std::unique_ptr<Argmax>> Argmax::create(const Device& device, bool use_subgroups) {
  const Reduction red = reduction_for(device.caps(), use_subgroups);
  std::unique_ptr<Argmax> a(new Argmax());
  a->group_size_ = red.group_size;
  ZINC_ASSIGN_OR_RETURN(a->pipeline_,
                        make_pipeline(device, "argmax" + red.suffix, 4, 16, {red.group_size, red.min_subgroup_size}));
  return a;
}

uint64_t Argmax::scratch_bytes(uint32_t n_rows) {
  return kCounterBytes + 8ull * std::min(n_rows, kSlicedRows) * kMaxSlices;
}

Status Argmax::record(Commands& cmd, const Activations& x, const BufferRange& out, uint32_t n_tokens, uint32_t cols,
                      const Buffer* scratch) const {
  if (x.stride < cols) return error("argmax: stride %u is less than cols %u", x.stride, cols);
  if (n_tokens == 0) return Status();
  const uint32_t per_slice = group_size_ * kUnroll;
  const bool sliced = scratch && n_tokens <= kSlicedRows && cols > per_slice;
  const uint32_t n_slices = sliced ? std::min((cols + per_slice - 1) / per_slice, kMaxSlices) : 1;
  if (sliced && scratch->size_bytes() < scratch_bytes(n_tokens))
    return error("argmax: scratch of %llu bytes, %llu needed", (unsigned long long)scratch->size_bytes(),
                 (unsigned long long)scratch_bytes(n_tokens));
  const uint32_t push[4] = {cols, x.stride, n_slices, (cols + n_slices - 1) / n_slices};
  const BufferRange counters = sliced ? BufferRange{scratch, 0, kCounterBytes} : out;
  const BufferRange records = sliced ? BufferRange{scratch, kCounterBytes, VK_WHOLE_SIZE} : out;
  const BufferRange buffers[4] = {x.range, out, counters, records};
  const Grid grid = n_slices > 1 ? Grid{n_slices, n_tokens} : grid_for(n_tokens);  // see argmax.comp
  cmd.dispatch(*pipeline_, buffers, push, sizeof push, grid.x, grid.y);
  return Status();
}

}  // namespace zinc::vulkan::ops
