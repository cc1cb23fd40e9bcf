// The device side of a kv::Cache: per attention layer, a K and a V buffer with the cache's
// geometry (its n_pages pages of kv::kPageTokens rows, its element type). kv::Cache keeps the
// page bookkeeping; executors write its page tables to the device each step. Borrows the Device.
#pragma once

#include <memory>
#include <vector>

#include "kv/cache.h"
#include "vulkan/ops/kv_write.h"

namespace zinc::vulkan {

class KvPool {
 public:
  static Result<std::unique_ptr<KvPool>> create(const Device& device, const graph::StateLayout& layout,
                                                int64_t n_pages, kv::KvType type);
  // The same geometry as `cache`.
  static Result<std::unique_ptr<KvPool>> create(const Device& device, const kv::Cache& cache) {
    return create(device, cache.layout(), cache.n_pages(), cache.type());
  }
  ops::KvLayerBuffers layer(int32_t kv_layer) const;
  int32_t n_layers() const { return int32_t(layers_.size()); }
  int64_t n_pages() const { return n_pages_; }
  bool f16() const { return type_ == kv::KvType::kF16; }
  uint64_t size_bytes() const { return size_bytes_; }

 private:
  KvPool() = default;
  struct Layer {
    std::unique_ptr<Buffer> k, v;
    graph::KvLayerSpec spec;
  };
  std::vector<Layer> layers_;
  int64_t n_pages_ = 0;
  kv::KvType type_ = kv::KvType::kF16;
  uint64_t size_bytes_ = 0;
};

}  // namespace zinc::vulkan
