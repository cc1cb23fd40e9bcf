// MoE router on the device: per token, softmax over the router logits, the k most probable
// experts (ties: lower id) and their weights, renormalised as graph::MoeRoute says. One
// workgroup per token; no barrier added.
#pragma once

#include <memory>

#include "vulkan/ops/op_util.h"

namespace zinc::vulkan::ops {

class MoeRoute {
 public:
  static constexpr uint32_t kMaxK = 64;
  static Result<std::unique_ptr<MoeRoute>> create(const Device& device, bool use_subgroups = true);
  ~MoeRoute();
  // logits: n_tokens rows of n_expert floats at logits.stride; ids (int32) and weights (float)
  // receive n_tokens rows of k, packed.
  Status record(Commands& cmd, const Activations& logits, const BufferRange& ids, const BufferRange& weights,
                uint32_t n_tokens, uint32_t n_expert, uint32_t k, bool normalize) const;

 private:
  MoeRoute() = default;
  uint32_t group_size_ = 256;
  std::unique_ptr<Pipeline> pipeline_;
};

}  // namespace zinc::vulkan::ops
