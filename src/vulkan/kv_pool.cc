#include "vulkan/kv_pool.h"

#include <cstring>

#include "core/check.h"
#include "vulkan/commands.h"

namespace zinc::vulkan {

Result<std::unique_ptr<KvPool>> KvPool::create(const Device& device, const graph::StateLayout& layout, int64_t n_pages,
                                               kv::KvType type, int32_t max_seqs) {
  if (n_pages <= 0) return error("KV pool of %lld pages", (long long)n_pages);
  if (max_seqs <= 0) return error("KV pool of %d sequences", max_seqs);
  std::unique_ptr<KvPool> p(new KvPool(device));
  p->max_seqs_ = max_seqs;
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
  // Recurrent state: kv::Cache's slot layout.
  uint64_t floats = 0;
  for (const graph::RecurrentLayerSpec& r : layout.recurrent_layers) {
    p->conv_offset_.push_back(uint32_t(floats));
    floats += uint64_t(r.conv_floats);
    p->ssm_offset_.push_back(uint32_t(floats));
    floats += uint64_t(r.ssm_floats);
  }
  if (floats > 0) {
    const uint64_t bytes = floats * 4 * uint64_t(max_seqs);
    if (bytes > device.caps().max_storage_buffer_range || floats >= (1ull << 32))
      return error("recurrent state of %d sequences (%llu bytes) exceeds the device's buffer range of %llu bytes",
                   max_seqs, (unsigned long long)bytes, (unsigned long long)device.caps().max_storage_buffer_range);
    p->slot_floats_ = uint32_t(floats);
    ZINC_ASSIGN_OR_RETURN(p->state_, Buffer::create(device, bytes, MemoryKind::kDeviceLocal));
    ZINC_ASSIGN_OR_RETURN(auto cmd, Commands::create(device));
    ZINC_RETURN_IF_ERROR(cmd->begin());
    cmd->zero(*p->state_, 0, bytes);
    cmd->barrier();
    ZINC_RETURN_IF_ERROR(cmd->end());
    ZINC_RETURN_IF_ERROR(cmd->submit_and_wait());
    p->size_bytes_ += bytes;
  }
  return p;
}

Result<std::vector<float>> KvPool::read_state(int32_t seq) const {
  if (seq < 0 || seq >= max_seqs_) return error("sequence %d outside the pool's %d slots", seq, max_seqs_);
  std::vector<float> out(slot_floats_);
  if (out.empty()) return out;
  const uint64_t bytes = uint64_t(slot_floats_) * 4;
  ZINC_ASSIGN_OR_RETURN(auto host, Buffer::create(*device_, bytes, MemoryKind::kHostVisible));
  ZINC_ASSIGN_OR_RETURN(auto cmd, Commands::create(*device_));
  ZINC_RETURN_IF_ERROR(cmd->begin());
  cmd->barrier();
  cmd->copy(*state_, uint64_t(seq) * bytes, *host, 0, bytes);
  cmd->barrier();
  ZINC_RETURN_IF_ERROR(cmd->end());
  ZINC_RETURN_IF_ERROR(cmd->submit_and_wait());
  std::memcpy(out.data(), host->mapped(), bytes);
  return out;
}

Status KvPool::write_state(int32_t seq, std::span<const float> state) const {
  if (seq < 0 || seq >= max_seqs_) return error("sequence %d outside the pool's %d slots", seq, max_seqs_);
  if (state.size() != slot_floats_) return error("recurrent state of %zu floats, the slot holds %u", state.size(), slot_floats_);
  if (state.empty()) return ok_status();
  const uint64_t bytes = uint64_t(slot_floats_) * 4;
  ZINC_ASSIGN_OR_RETURN(auto host, Buffer::create(*device_, bytes, MemoryKind::kHostVisible));
  std::memcpy(host->mapped(), state.data(), bytes);
  ZINC_ASSIGN_OR_RETURN(auto cmd, Commands::create(*device_));
  ZINC_RETURN_IF_ERROR(cmd->begin());
  cmd->barrier();
  cmd->copy(*host, 0, *state_, uint64_t(seq) * bytes, bytes);
  cmd->barrier();
  ZINC_RETURN_IF_ERROR(cmd->end());
  return cmd->submit_and_wait();
}

ops::KvLayerBuffers KvPool::layer(int32_t kv_layer) const {
  const Layer& l = layers_[size_t(kv_layer)];
  return {l.k.get(), l.v.get(), uint32_t(l.spec.n_head_kv), uint32_t(l.spec.head_dim_k), uint32_t(l.spec.head_dim_v),
          f16()};
}

Status KvPool::copy_rows(int32_t src_page, int32_t dst_page, int32_t n_rows) const {
  ZINC_CHECK(src_page >= 0 && src_page < n_pages_ && dst_page >= 0 && dst_page < n_pages_);
  ZINC_CHECK(n_rows >= 0 && n_rows <= kv::kPageTokens);
  ZINC_ASSIGN_OR_RETURN(auto cmd, Commands::create(*device_));
  ZINC_RETURN_IF_ERROR(cmd->begin());
  const uint64_t elem = f16() ? 2 : 4;
  for (const Layer& l : layers_) {
    const uint64_t kr = uint64_t(l.spec.k_row_elems()) * elem, vr = uint64_t(l.spec.v_row_elems()) * elem;
    const uint64_t page_rows = kv::kPageTokens;
    if (kr > 0) cmd->copy(*l.k, uint64_t(src_page) * page_rows * kr, *l.k, uint64_t(dst_page) * page_rows * kr, kr * uint64_t(n_rows));
    if (vr > 0) cmd->copy(*l.v, uint64_t(src_page) * page_rows * vr, *l.v, uint64_t(dst_page) * page_rows * vr, vr * uint64_t(n_rows));
  }
  ZINC_RETURN_IF_ERROR(cmd->end());
  return cmd->submit_and_wait();
}

}  // namespace zinc::vulkan
