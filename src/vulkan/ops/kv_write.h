// The device side of the paged KV cache as the ops see it, and the per-step data they read, plus
// KvWrite (graph::KvWrite): each token's K and V heads stored at (seq, position) of one layer.
#pragma once

#include <memory>

#include "graph/ops.h"
#include "vulkan/ops/op_util.h"

namespace zinc::vulkan::ops {

// Per-step int32 data in one buffer, as word offsets: positions[n_tokens], seq_ids[n_tokens],
// and page tables pages[seq * max_pages + i] (kv::Cache page ids of 16-token pages).
struct StepData {
  const Buffer* buffer = nullptr;
  uint32_t positions = 0, seq_ids = 0, pages = 0, max_pages = 0;
};

// One layer's K and V pools: row (page * 16 + slot) holds n_kv_heads * head_dim elements,
// f16 (packed in pairs) or f32.
struct KvLayerBuffers {
  const Buffer* k = nullptr;
  const Buffer* v = nullptr;
  uint32_t n_kv_heads = 0, head_dim_k = 0, head_dim_v = 0;
  bool f16 = true;
};

class KvWrite {
 public:
  // use_subgroups: the norm variant's head sums with subgroup arithmetic where the device has it.
  static Result<std::unique_ptr<KvWrite>> create(const Device& device, bool f16, bool use_subgroups = true);
  ~KvWrite();
  // One workgroup per token; no barrier added. Head layouts must match the layer's geometry.
  Status record(Commands& cmd, const Activations& k, const graph::HeadLayout& k_heads, const Activations& v,
                const graph::HeadLayout& v_heads, const KvLayerBuffers& layer, const StepData& step,
                uint32_t n_tokens) const;

  // A per-head RMS norm (graph::QkNorm) done before the rotation: weight of head_dim floats.
  struct HeadNorm {
    BufferRange weight;
    float eps = 1e-6f;
  };
  // RoPE fused in (the graph's Rope of q, Rope of k, KvWrite): q is rotated in place, k on its
  // way into the cache (the k activation keeps its values). `table` as for ops::Rope. With
  // q_norm / k_norm (the QkNorms before those Ropes) the heads are normalised first: one
  // workgroup per query head and per KV head (key head dims up to kMaxNormHeadDim).
  struct RopeArgs {
    Activations q;
    graph::HeadLayout q_heads;
    const graph::RopeParams* params = nullptr;
    BufferRange table;
    uint32_t table_offset = 0;
    const HeadNorm* q_norm = nullptr;
    const HeadNorm* k_norm = nullptr;
  };
  static constexpr int32_t kMaxNormHeadDim = 512;  // shaders/kv_write.comp kMaxHeadDim
  Status record_rope(Commands& cmd, const RopeArgs& rope, const Activations& k, const graph::HeadLayout& k_heads,
                     const Activations& v, const graph::HeadLayout& v_heads, const KvLayerBuffers& layer,
                     const StepData& step, uint32_t n_tokens) const;

 private:
  KvWrite() = default;
  Status check(const graph::HeadLayout& k_heads, const graph::HeadLayout& v_heads, const KvLayerBuffers& layer) const;
  bool f16_ = true;
  std::unique_ptr<Pipeline> pipeline_, rope_pipeline_, norm_pipeline_;
};

}  // namespace zinc::vulkan::ops
