// The device side of a kv::Cache: per attention layer, a K and a V buffer with the cache's
// geometry (its n_pages pages of kv::kPageTokens rows, its element type), and one float32 buffer
// of recurrent state with the cache's slot layout (max_seqs slots; per recurrent layer its conv
// then its delta-net state). kv::Cache keeps the page bookkeeping; executors write its page
// tables to the device each step. On Vulkan the device state is the sequences' state (the
// cache's host copy is not used); read_state/write_state copy one slot. Borrows the Device.
#pragma once

#include <memory>
#include <span>
#include <vector>

#include "kv/cache.h"
#include "vulkan/ops/kv_write.h"

namespace zinc::vulkan {

class KvPool {
 public:
  static Result<std::unique_ptr<KvPool>> create(const Device& device, const graph::StateLayout& layout,
                                                int64_t n_pages, kv::KvType type, int32_t max_seqs = 1);
  // The same geometry as `cache`.
  static Result<std::unique_ptr<KvPool>> create(const Device& device, const kv::Cache& cache) {
    return create(device, cache.layout(), cache.n_pages(), cache.type(), cache.max_seqs());
  }
  ops::KvLayerBuffers layer(int32_t kv_layer) const;
  int32_t n_layers() const { return int32_t(layers_.size()); }
  int64_t n_pages() const { return n_pages_; }
  bool f16() const { return type_ == kv::KvType::kF16; }
  uint64_t size_bytes() const { return size_bytes_; }
  // Copies rows [0, n_rows) of page `src` to page `dst` in every layer (waits for the copy).
  Status copy_rows(int32_t src_page, int32_t dst_page, int32_t n_rows) const;

  // Recurrent state (all null / zero without recurrent layers).
  const Buffer* state() const { return state_.get(); }
  uint32_t slot_floats() const { return slot_floats_; }
  uint32_t conv_offset(int32_t recurrent_layer) const { return conv_offset_[size_t(recurrent_layer)]; }
  uint32_t ssm_offset(int32_t recurrent_layer) const { return ssm_offset_[size_t(recurrent_layer)]; }
  int32_t max_seqs() const { return max_seqs_; }
  // Slot `seq`'s slot_floats() floats, copied from / to the device.
  Result<std::vector<float>> read_state(int32_t seq) const;
  Status write_state(int32_t seq, std::span<const float> state) const;

 private:
  KvPool(const Device& d) : device_(&d) {}
  const Device* device_;
  struct Layer {
    std::unique_ptr<Buffer> k, v;
    graph::KvLayerSpec spec;
  };
  std::vector<Layer> layers_;
  int64_t n_pages_ = 0;
  kv::KvType type_ = kv::KvType::kF16;
  uint64_t size_bytes_ = 0;
  std::unique_ptr<Buffer> state_;
  uint32_t slot_floats_ = 0;
  std::vector<uint32_t> conv_offset_, ssm_offset_;
  int32_t max_seqs_ = 1;
};

}  // namespace zinc::vulkan
