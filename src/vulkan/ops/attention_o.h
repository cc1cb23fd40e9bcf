// One decode token's attention over a short context fused with the output projection and its
// residual add (shaders/attention_o.comp): y += W_o . attention(q, K, V), one dispatch where the
// graph has an Attention, then a Matmul adding into the residual stream. Each workgroup takes a
// KV head and a block of W_o's rows, repeats that head's attention (every key, no split) and
// writes its partial products; the block's last workgroup adds them into y in KV-head order.
// Keys up to kMaxKeys; longer contexts take ops::Attention and the matvec. No barrier added.
#pragma once

#include <memory>

#include "vulkan/ops/kv_write.h"
#include "vulkan/weights.h"

namespace zinc::vulkan::ops {

struct AttentionOArgs {
  Activations q;
  graph::HeadLayout q_heads;
  const Activations* gate = nullptr;  // optional sigmoid output gate
  graph::HeadLayout gate_heads;
  Activations y;  // the residual stream, one token
  float scale = 1.f;
};

class AttentionO {
 public:
  static constexpr uint32_t kMaxKeys = 256;  // shaders/attention_o.comp
  // For W_o of `type`, `group` query heads a KV head and heads of head_dim.
  static Result<std::unique_ptr<AttentionO>> create(const Device& device, TensorType type, uint32_t group,
                                                    uint32_t head_dim);
  ~AttentionO();
  // Why the kernel cannot take this geometry (null: it can): the device, head dims, group, W_o.
  static const char* refusal(const DeviceCaps& caps, const KvLayerBuffers& layer, uint32_t n_q_heads,
                             const WeightBuffer& w_o);
  // Rows of W_o a workgroup takes, and the partial floats and counter words record() needs.
  static uint32_t rows_per_group(uint32_t rows, uint32_t n_kv_heads);
  static uint64_t partial_floats(uint32_t rows, uint32_t n_kv_heads) { return uint64_t(rows) * n_kv_heads; }
  static uint32_t counter_words(uint32_t rows, uint32_t n_kv_heads) {
    const uint32_t per = rows_per_group(rows, n_kv_heads);
    return (rows + per - 1) / per;
  }
  // `partials`: partial_floats() floats; `counters`: counter_words() zeros from counter_word,
  // left zero. The token's position must be below kMaxKeys.
  Status record(Commands& cmd, const AttentionOArgs& a, const WeightBuffer& w_o, const KvLayerBuffers& layer,
                const StepData& step, const BufferRange& partials, const BufferRange& counters,
                uint32_t counter_word) const;

 private:
  AttentionO() = default;
  TensorType type_{};
  uint32_t group_ = 0, head_dim_ = 0;
  DeviceCaps caps_;
  std::unique_ptr<Pipeline> pipeline_;
};

}  // namespace zinc::vulkan::ops
