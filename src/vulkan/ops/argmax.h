// Greedy sampling on the device: out[t] = the index of the largest x[t][k], k < cols (the
// first on ties; NaN never wins), as uint32. One workgroup per row, or with `scratch` (for up to
// kSlicedRows rows) up to kMaxSlices workgroups per row, the last of which merges their records;
// no barrier added.
#pragma once

#include <memory>

#include "vulkan/ops/op_util.h"

namespace zinc::vulkan::ops {

class Argmax {
 public:
  static Result<std::unique_ptr<Argmax>> create(const Device& device, bool use_subgroups = true);
  ~Argmax();
  static constexpr uint32_t kSlicedRows = 8, kMaxSlices = 128;
  // Scratch for the sliced form: counters (zero before first use; left at zero) and records.
  static uint64_t scratch_bytes(uint32_t n_rows);
  Status record(Commands& cmd, const Activations& x, const BufferRange& out, uint32_t n_tokens, uint32_t cols,
                const Buffer* scratch = nullptr) const;

 private:
  Argmax() = default;
  std::unique_ptr<Pipeline> pipeline_;
  uint32_t group_size_ = 0;
};

}  // namespace zinc::vulkan::ops
