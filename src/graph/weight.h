// A weight tensor as the graph sees it: a borrowed view of stored bytes (usually the mmapped
// GGUF) with its type and shape. The model that made it owns the bytes and outlives every graph.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>

#include "core/tensor_type.h"

namespace zinc::graph {

struct Weight {
  std::string name;                       // GGUF tensor name
  TensorType type = TensorType::F32;
  const void* data = nullptr;             // borrowed
  std::array<int64_t, 4> ne{1, 1, 1, 1};  // ne[0] contiguous (GGUF order)
  size_t row_bytes = 0;                   // bytes of one row of ne[0] elements
  size_t slice_bytes = 0;                 // bytes of one ne[0] x ne[1] matrix (expert stacks)

  int64_t cols() const { return ne[0]; }
  int64_t rows() const { return ne[1]; }
  int64_t n_elements() const { return ne[0] * ne[1] * ne[2] * ne[3]; }
  // Element-wise weights (norms, biases, gates) are always float32: the model converts them.
  const float* f32() const { return static_cast<const float*>(data); }
};

}  // namespace zinc::graph
