// Builds a GGUF v3 file. Tensor data is produced one tensor at a time by a callback while the
// file is written, so memory stays at the size of the largest tensor, whatever the file size.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "core/status.h"
#include "core/tensor_type.h"
#include "gguf/value.h"

namespace zinc::gguf {

class Writer {
 public:
  // Fills exactly the tensor's bytes (row after row, ne[0] contiguous).
  using Fill = std::function<Status(std::span<uint8_t> out)>;

  explicit Writer(uint32_t alignment = 32) : alignment_(alignment) {}

  // Sets a metadata key; a key set twice keeps its first position and the last value.
  void set(const std::string& key, Value value);
  void remove(const std::string& key);
  bool has(const std::string& key) const;

  // Declares a tensor; shape is ne[0..n_dims-1]. Errors on a duplicate name or a bad shape.
  Status add_tensor(const std::string& name, TensorType type, const std::vector<int64_t>& ne, Fill fill);

  // Writes the file to `path` through a temporary file renamed at the end, so a failure leaves
  // no partial file behind. Errors read "<path>: <what>".
  Status write(const std::string& path) const;

 private:
  struct Tensor {
    std::string name;
    TensorType type;
    std::vector<int64_t> ne;
    uint64_t size_bytes;
    uint64_t offset;
    Fill fill;
  };
  uint32_t alignment_;
  std::vector<std::pair<std::string, Value>> kvs_;
  std::vector<Tensor> tensors_;
  uint64_t data_size_ = 0;
};

}  // namespace zinc::gguf
