#include "vulkan/kv_pool.h"

namespace zinc::vulkan {

Result<std::unique_ptr<KvPool>> KvPool::create(const Device& device, const graph::StateLayout& layout, int64_t n_pages,
                                               kv::KvType type) {
  if (n_pages <= 0) return error("KV pool of %lld pages", (long long)n_pages);
  std::unique_ptr<KvPool> p(new KvPool());
  p->n_pages_ = n_pages;
  p->type_ = type;
  const uint64_t elem = type == kv::KvType::kF16 ? 2 : 4;
  const uint64_t rows = uint64_t(n_pages) * kv::kPageTokens;
  for (const graph::KvLayerSpec& s : layout.kv_layers) {
    Layer l;
    l.spec = s;
    const uint64_t kb = rows * uint64_t(s.k_row_elems()) * elem, vb = rows * uint64_t(s.v_row_elems()) * elem;
    if (kb > device.caps().max_storage_buffer_range || vb > device.caps().max_storage_buffer_range)
      return error("KV pool of %lld pages: one layer's %llu bytes exceed the device's buffer range of %llu bytes",
                   (long long)n_pages, (unsigned long long)std::max(kb, vb),
                   (unsigned long long)device.caps().max_storage_buffer_range);
    ZINC_ASSIGN_OR_RETURN(l.k, Buffer::create(device, std::max<uint64_t>(kb, 4), MemoryKind::kDeviceLocal));
    ZINC_ASSIGN_OR_RETURN(l.v, Buffer::create(device, std::max<uint64_t>(vb, 4), MemoryKind::kDeviceLocal));
    p->size_bytes_ += kb + vb;
    p->layers_.push_back(std::move(l));
  }
  return p;
}

ops::KvLayerBuffers KvPool::layer(int32_t kv_layer) const {
  const Layer& l = layers_[size_t(kv_layer)];
  return {l.k.get(), l.v.get(), uint32_t(l.spec.n_head_kv), uint32_t(l.spec.head_dim_k), uint32_t(l.spec.head_dim_v),
          f16()};
}

}  // namespace zinc::vulkan
