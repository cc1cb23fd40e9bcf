// A model's weights on one device, uploaded once and shared by every executor of the model
// (one per batch shape): matrices repacked as WeightBuffers, element-wise vectors (norm weights,
// biases) as float32 buffers. Keyed by the graph::Weight the graphs point at (owned by the
// model, which outlives this). Borrows the Device.
#pragma once

#include <memory>
#include <unordered_map>

#include "graph/graph.h"
#include "vulkan/commands.h"
#include "vulkan/weights.h"

namespace zinc::vulkan {

class ModelWeights {
 public:
  static Result<std::unique_ptr<ModelWeights>> create(const Device& device);
  // Uploads every weight `graph` uses that is not on the device yet; with `progress`, shows the
  // upload's progress on stderr.
  Status add(const graph::Graph& graph, bool progress = false);
  // The uploaded matrix or vector (nullptr / an empty range when add() has not seen it).
  const WeightBuffer* matrix(const graph::Weight* w) const;
  BufferRange vector(const graph::Weight* w) const;
  // The router of a MoE layer folded into the projection before it (router_fold.h): R and M as
  // device matrices, made and uploaded on first use, shared by the executors.
  struct FoldedRouter {
    std::unique_ptr<WeightBuffer> stream, input;
  };
  Result<const FoldedRouter*> folded_router(const graph::Weight& router, const graph::Weight& norm,
                                            const graph::Weight& projection, TensorType input_type);
  uint64_t size_bytes() const { return size_bytes_; }
  Uploader& uploader() { return *uploader_; }

 private:
  explicit ModelWeights(const Device& d) : device_(d) {}
  const Device& device_;
  std::unique_ptr<Uploader> uploader_;
  std::unordered_map<const graph::Weight*, std::unique_ptr<WeightBuffer>> matrices_;
  std::unordered_map<const graph::Weight*, std::unique_ptr<Buffer>> vectors_;
  std::unordered_map<const graph::Weight*, FoldedRouter> folded_routers_;  // by router
  uint64_t size_bytes_ = 0;
};

}  // namespace zinc::vulkan
