#include "vulkan/ops/attention_o.h"

#include <algorithm>
#include <bit>
#include <iterator>
#include <span>
#include <string>

namespace zinc::vulkan::ops {
namespace {

struct Push {
  uint32_t q_head_stride, q_offset, n_kv_heads, flags;
  uint32_t g_head_stride, g_offset;
  uint32_t rows, cols, rows_per_group, y_offset;
  float scale;
  uint32_t pos_offset, seq_offset, pages_offset;
  uint32_t max_pages, q_word, h_word, m_word;
  uint32_t counter_word;
  uint32_t m_rows, m_q_word, m_m_word, topk;
  uint32_t n_partials, m_per;
  uint32_t q_groups;
};
static_assert(sizeof(Push) == 104, "mirrors shaders/attention_o.comp");
// W_o, W_o again (quant.glsl's second matrix, unused), q, step data, K pool, V pool, gate, y,
// partials, counters; the router variant: M, R s, logits, ids, norm weight, weighted y, norm
// partials.
constexpr uint32_t kBindings = 10, kRouterBindings = 17;
constexpr uint32_t kThreads = 256, kMaxG = 8, kMaxCols = 2048, kMinSubgroup = 8;

}  // namespace

AttentionO::~AttentionO() = default;

const char* AttentionO::refusal(const DeviceCaps& caps, const KvLayerBuffers& layer, uint32_t n_q_heads,
                                const WeightBuffer& w_o) {
  if (!caps.subgroup_arithmetic || !caps.subgroup_shuffle || !caps.int8_dot) return "no subgroup or int8 dot products";
  if (caps.min_subgroup_size < kMinSubgroup || caps.max_workgroup_invocations < kThreads)
    return "subgroups under 8 or workgroups under 256";
  if (!layer.f16) return "an f32 KV pool";
  const uint32_t d = layer.head_dim_k;
  if (layer.head_dim_v != d || d < 32 || d > 256 || !std::has_single_bit(d)) return "head dims not one power of two in 32..256";
  if (layer.n_kv_heads == 0 || n_q_heads % layer.n_kv_heads != 0) return "query heads not a multiple of KV heads";
  const uint32_t group = n_q_heads / layer.n_kv_heads;
  if (group > kMaxG || group * d > kMaxCols) return "more than 8 query heads or 2048 columns a KV head";
  if (!int8_capable(w_o.type()) || w_o.chunks().size() != 1) return "W_o not one chunk of an int8 type";
  if (uint64_t(w_o.cols()) != uint64_t(n_q_heads) * d) return "W_o's columns are not the heads'";
  return nullptr;
}

const char* AttentionO::router_refusal(const WeightBuffer& w_o, uint32_t q_groups, const WeightBuffer& m, uint32_t k,
                                      uint32_t n_partials) {
  if (m.type() != TensorType::Q8_0 || m.chunks().size() != 1) return "M not one chunk of Q8_0";
  if (m.cols() != w_o.cols()) return "M's columns are not W_o's";
  if (m.rows() == 0 || m.rows() > kMaxRouterRows) return "no experts, or more than 256";
  if (k > m.rows()) return "more experts to rank than there are";
  if (n_partials < row_blocks(uint32_t(w_o.rows()), q_groups)) return "fewer norm partials than row blocks";
  return nullptr;
}

uint32_t AttentionO::rows_per_group(uint32_t rows, uint32_t q_groups) {
  // About 256 workgroups: each repeats its group's attention, so not many, yet enough to stream
  // W_o. On the H100 (8B) 128 gave tg128 279.3 against 267.3 with 256 before session 29's
  // local-memory fix; after it 256 gave the 8B 314.7 -> 316.4 (session 30), and with one query
  // head a router workgroup the 30B 331.5 -> 334.9 and the 35B 309.8 -> 311.6, where 64 lost
  // (292.9, 303.9; session 31).
  const uint64_t want = (uint64_t(rows) * q_groups + 255) / 256;
  return std::clamp<uint32_t>(std::bit_ceil(uint32_t(std::max<uint64_t>(want, 1))), 16, 1024);
}

uint32_t AttentionO::rank_parts(uint32_t experts, uint32_t min_subgroup_size) {
  uint32_t parts = 1;
  while (parts < 8 && 2 * parts <= min_subgroup_size && 2 * parts * uint64_t(experts) <= kThreads) parts *= 2;
  return parts;
}

Result<std::unique_ptr<AttentionO>> AttentionO::create(const Device& device, TensorType type, uint32_t group,
                                                       uint32_t head_dim, bool router, uint32_t rank_parts) {
  if (!int8_capable(type)) return error("attention + output projection: %s has no int8 kernel", std::string(type_name(type)).c_str());
  if (group == 0 || group > kMaxG) return error("attention + output projection: %u query heads a KV head", group);
  if (!std::has_single_bit(rank_parts) || rank_parts > std::min(8u, device.caps().min_subgroup_size))
    return error("attention + output projection: %u lanes a ranked value", rank_parts);
  std::unique_ptr<AttentionO> op(new AttentionO());
  op->type_ = type;
  op->group_ = group;
  op->head_dim_ = head_dim;
  op->router_ = router;
  op->caps_ = device.caps();
  ZINC_ASSIGN_OR_RETURN(op->pipeline_, make_pipeline(device, std::string(router ? "attention_o_router_" : "attention_o_") +
                                                                 shader_type_suffix(type),
                                                     router ? kRouterBindings : kBindings, sizeof(Push),
                                                     {std::max(device.caps().min_subgroup_size, kMinSubgroup),
                                                      workgroup_heads(group, router), head_dim, rank_parts}));
  return op;
}

Status AttentionO::record(Commands& cmd, const AttentionOArgs& a, const WeightBuffer& w_o, const KvLayerBuffers& layer,
                          const StepData& step, const BufferRange& partials, const BufferRange& counters,
                          uint32_t counter_word, const AttentionORouter* router) const {
  const uint32_t n_q = uint32_t(a.q_heads.n_heads);
  if (const char* why = refusal(caps_, layer, n_q, w_o))
    return error("attention + output projection: %s", why);
  if (w_o.type() != type_ || n_q / layer.n_kv_heads != group_ || layer.head_dim_k != head_dim_)
    return error("attention + output projection made for %s, %u heads a KV head", std::string(type_name(type_)).c_str(), group_);
  if (uint32_t(a.q_heads.head_dim) != layer.head_dim_k || (a.gate && a.gate_heads.head_dim != a.q_heads.head_dim))
    return error("attention + output projection: head dims differ");
  if ((router != nullptr) != router_) return error("attention + output projection: router arguments %s", router_ ? "missing" : "given");
  const uint32_t qgs = q_groups(n_q, layer.n_kv_heads, router_);
  if (router) {
    if (const char* why = router_refusal(w_o, qgs, *router->m, router->k, router->n_partials))
      return error("attention + output projection with a router: %s", why);
  }
  const uint32_t rows = uint32_t(w_o.rows()), per = rows_per_group(rows, qgs);
  const WeightChunk& c = w_o.chunks()[0];
  const Activations& g = a.gate ? *a.gate : a.q;
  Push push{uint32_t(a.q_heads.head_stride), uint32_t(a.q_heads.offset), layer.n_kv_heads, a.gate ? 1u : 0u,
            uint32_t(a.gate_heads.head_stride), uint32_t(a.gate_heads.offset),
            rows, uint32_t(w_o.cols()), per, 0,
            a.scale, step.positions, step.seq_ids, step.pages,
            step.max_pages, c.q_word, c.h_word, c.m_word, counter_word,
            0, 0, 0, 0, 0, 0, qgs};
  BufferRange buffers[kRouterBindings] = {whole(*c.buffer), whole(*c.buffer), a.q.range, whole(*step.buffer),
                                          whole(*layer.k), whole(*layer.v), g.range, a.y.range, partials, counters};
  uint32_t n_buffers = kBindings, blocks = row_blocks(rows, qgs);
  if (router) {
    const WeightChunk& mc = router->m->chunks()[0];
    push.m_rows = uint32_t(router->m->rows());
    push.m_q_word = mc.q_word;
    push.m_m_word = mc.m_word;
    push.topk = router->k;
    push.n_partials = router->n_partials;
    push.m_per = router_rows_per_group(rows, qgs);
    const BufferRange more[kRouterBindings - kBindings] = {
        whole(*mc.buffer), router->stream_logits, router->logits, router->k > 0 ? router->ids : router->logits,
        router->norm_weight, router->weighted, router->partials};
    std::copy(std::begin(more), std::end(more), buffers + kBindings);
    n_buffers = kRouterBindings;
    blocks += router_blocks(rows, qgs, push.m_rows);
  }
  cmd.dispatch(*pipeline_, std::span(buffers, n_buffers), &push, sizeof push, qgs * blocks);
  return Status();
}

}  // namespace zinc::vulkan::ops
