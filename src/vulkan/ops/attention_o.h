// One decode token's attention over a short context fused with the output projection and its
// residual add (shaders/attention_o.comp): y += W_o . attention(q, K, V), one dispatch where the
// graph has an Attention, then a Matmul adding into the residual stream. Each workgroup takes a
// group of a KV head's query heads and a block of W_o's rows, repeats that group's attention
// (every key, no split) and writes its partial products; the block's last workgroup adds them
// into y in group order.
// Keys up to kMaxKeys; longer contexts take ops::Attention and the matvec. No barrier added.
// A variant (create(..., router = true)) also does a MoE router folded into W_o
// (vulkan/router_fold.h) and the next norm's inputs, as the matvecs it replaces there did.
#pragma once

#include <algorithm>
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

// The router folded into W_o: logits = stream_logits + M a (M = R W_o, Q8_0), the k largest
// ranked, and the inputs of the norm the router's experts read (as ops::NormOut).
struct AttentionORouter {
  const WeightBuffer* m = nullptr;  // n_expert x W_o's cols, Q8_0, one chunk
  BufferRange stream_logits;        // R s, n_expert floats
  BufferRange logits;               // out, n_expert floats
  BufferRange ids;                  // out with k > 0: the k largest logits' indices, largest first
  uint32_t k = 0;
  BufferRange norm_weight;          // W_o's rows floats
  BufferRange weighted;             // out: the new y times norm_weight
  BufferRange partials;             // out: n_partials words, the row blocks' sums of y^2, then zeros
  uint32_t n_partials = 0;
};

class AttentionO {
 public:
  static constexpr uint32_t kMaxKeys = 256;  // shaders/attention_o.comp
  static constexpr uint32_t kMaxRouterRows = 256;  // shaders/attention_o.comp: its scores' shared array
  // For W_o of `type`, `group` query heads a KV head and heads of head_dim; `router`: the
  // variant that takes AttentionORouter, whose ranking shares each value's count among
  // `rank_parts` lanes (rank_parts(), for the router's experts), or with 1 ranks each subgroup's
  // chunk first (topk_rank.glsl); every form ranks correctly.
  static Result<std::unique_ptr<AttentionO>> create(const Device& device, TensorType type, uint32_t group,
                                                    uint32_t head_dim, bool router = false, uint32_t rank_parts = 1);
  // Lanes a value for ranking `experts` in one workgroup: the most, up to 8 and the subgroup
  // size, that still leave every value its lanes.
  static uint32_t rank_parts(uint32_t experts, uint32_t min_subgroup_size);
  ~AttentionO();
  // Why the kernel cannot take this geometry (null: it can): the device, head dims, group, W_o.
  static const char* refusal(const DeviceCaps& caps, const KvLayerBuffers& layer, uint32_t n_q_heads,
                             const WeightBuffer& w_o);
  // Why the router variant cannot take this router (null: it can), for W_o of `rows`.
  static const char* router_refusal(const WeightBuffer& w_o, uint32_t q_groups, const WeightBuffer& m, uint32_t k,
                                    uint32_t n_partials);
  // Query heads a workgroup takes for `group` query heads a KV head, and the workgroups of a row
  // block, q_groups, which the helpers below take. The router variant takes one: on the H100
  // (session 31), one against four gave Qwen3-30B-A3B tg128 321.2 -> 331.8 and Qwen3.5-35B-A3B
  // 307.4 -> 310.4 (both 2048 rows of W_o), while Llama-3-8B (no router, 4096 rows) lost with two
  // (317.9 -> 311.0) and one (295.5); else groups of 8 in two workgroups, as ops::Attention. A
  // router model with 4096 rows (Mixtral's shape) has not been measured either way.
  static uint32_t workgroup_heads(uint32_t group, bool router) {
    return router ? 1 : group > 4 && group % 4 == 0 ? 4 : group;
  }
  static uint32_t q_groups(uint32_t n_q_heads, uint32_t n_kv_heads, bool router) {
    return n_q_heads / workgroup_heads(n_q_heads / n_kv_heads, router);
  }
  // Rows of W_o a workgroup takes, its row blocks (the norm partials the router variant writes),
  // and the partial floats and counter words record() needs (m_rows: the router's, or 0).
  static uint32_t rows_per_group(uint32_t rows, uint32_t q_groups);
  static uint32_t row_blocks(uint32_t rows, uint32_t q_groups) {
    const uint32_t per = rows_per_group(rows, q_groups);
    return (rows + per - 1) / per;
  }
  // M's rows a workgroup of the router variant takes: about the bytes of a W_o block's.
  static uint32_t router_rows_per_group(uint32_t rows, uint32_t q_groups) {
    return std::max<uint32_t>(rows_per_group(rows, q_groups) / 2, 8);
  }
  static uint32_t router_blocks(uint32_t rows, uint32_t q_groups, uint32_t m_rows) {
    const uint32_t per = router_rows_per_group(rows, q_groups);
    return (m_rows + per - 1) / per;
  }
  static uint64_t partial_floats(uint32_t rows, uint32_t q_groups, uint32_t m_rows = 0) {
    return uint64_t(rows + m_rows) * q_groups;
  }
  static uint32_t counter_words(uint32_t rows, uint32_t q_groups, uint32_t m_rows = 0) {
    return row_blocks(rows, q_groups) + (m_rows ? router_blocks(rows, q_groups, m_rows) + 1 : 0);
  }
  // `partials`: partial_floats() floats; `counters`: counter_words() zeros from counter_word,
  // left zero. The token's position must be below kMaxKeys. `router` for the router variant only.
  Status record(Commands& cmd, const AttentionOArgs& a, const WeightBuffer& w_o, const KvLayerBuffers& layer,
                const StepData& step, const BufferRange& partials, const BufferRange& counters,
                uint32_t counter_word, const AttentionORouter* router = nullptr) const;

 private:
  AttentionO() = default;
  TensorType type_{};
  uint32_t group_ = 0, head_dim_ = 0;
  bool router_ = false;
  DeviceCaps caps_;
  std::unique_ptr<Pipeline> pipeline_;
};

}  // namespace zinc::vulkan::ops
