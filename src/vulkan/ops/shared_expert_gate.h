// Shared-expert gate (graph::SharedExpertGate): out[t] += sigmoid(gate . x[t]) * shared[t], or
// out[t] = ... with `overwrite` (then a later MoeMatvec::record_down(accumulate) adds the routed
// experts without a separate add). One workgroup per token; no barrier added.
#pragma once

#include <memory>

#include "vulkan/ops/op_util.h"

namespace zinc::vulkan::ops {

class SharedExpertGate {
 public:
  static Result<std::unique_ptr<SharedExpertGate>> create(const Device& device, bool use_subgroups = true);
  ~SharedExpertGate();
  // x: rows of n floats, gate: n floats; shared and out: rows of m floats at one stride.
  Status record(Commands& cmd, const Activations& x, const BufferRange& gate, const Activations& shared,
                const Activations& out, uint32_t n_tokens, uint32_t n, uint32_t m, bool overwrite = false) const;

 private:
  SharedExpertGate() = default;
  std::unique_ptr<Pipeline> pipeline_;
};

}  // namespace zinc::vulkan::ops
