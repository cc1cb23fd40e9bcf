#include "vulkan/ops/attention.h"

#include <algorithm>
#include <string>

namespace zinc::vulkan::ops {
namespace {

struct Push {
  uint32_t q_stride, q_head_stride, q_offset, n_q_heads;
  uint32_t dk, dv, n_kv_heads, group;
  uint32_t g_stride, g_head_stride, g_offset, flags;
  uint32_t out_stride;
  float scale;
  uint32_t n_splits, min_chunk;
  uint32_t pos_offset, seq_offset, pages_offset, max_pages;
};
static_assert(sizeof(Push) == 80, "mirrors shaders/attention.comp");

struct PrefillPush {
  Push base;  // with n_splits, min_chunk replaced by n_tokens, 0
  uint32_t hg, bq, pad[2];
};
static_assert(sizeof(PrefillPush) == 96, "mirrors shaders/attention_prefill.comp");

struct CombinePush {
  uint32_t n_q_heads, dv, n_splits, flags;
  uint32_t out_stride, g_stride, g_head_stride, g_offset;
};

// Decode splits hold at least one whole 128-key tile of the decode kernel, up to 64 of them (its
// merge holds 64 records per head). On the H200, Llama-3-8B at depth 4096 (33 live splits of 128
// keys) decodes at 210.7 tok/s against 206.0 with at most 32 (17 of 256 keys) and 196.0 with 64
// of 65 keys; at depth 0 one split of up to 128 keys gives 238.6 against 235.4 with two of 64.
constexpr uint32_t kMaxG = 8, kMaxDim = 256, kMinChunk = 128, kMaxSplits = 64;
constexpr uint32_t kDecodeMaxTokens = 8;  // attention_decode.comp up to here
constexpr uint32_t kCoopmatRows = 64;     // query rows per workgroup of attention_prefill_coopmat.comp

}  // namespace

Attention::~Attention() = default;

uint32_t Attention::coopmat_shared_bytes(uint32_t max_dim, uint32_t keys) {
  // K/V tile, S/P tile and broadcast matrix in 16-byte words, and two 256-float and two 64-int
  // arrays (attention_prefill_coopmat.comp).
  const uint32_t words = keys * (max_dim / 8 + 1) + kCoopmatRows * (keys / 4 + 1) + kCoopmatRows * 4;
  return words * 16 + 2 * 256 * 4 + 2 * kCoopmatRows * 4;
}

Result<std::unique_ptr<Attention>> Attention::create(const Device& device, bool f16, const AttentionOptions& options) {
  std::unique_ptr<Attention> op(new Attention());
  op->f16_ = f16;
  const DeviceCaps& caps = device.caps();
  if (options.phase_clock && !(f16 && caps.subgroup_arithmetic && caps.shader_clock))
    return error("attention phase clock: needs the decode kernel (f16 cache, subgroups) and VK_KHR_shader_clock");
  op->phase_clock_ = options.phase_clock;
  ZINC_ASSIGN_OR_RETURN(op->pipeline_, make_pipeline(device, f16 ? "attention" : "attention_f32", 6, sizeof(Push), {}));
  ZINC_ASSIGN_OR_RETURN(op->combine_, make_pipeline(device, "attention_combine", 3, sizeof(CombinePush), {}));
  // The prefill kernel's tiles (attention_prefill.comp): about 39 KiB of shared memory with 32
  // query vectors and 32 f16 (16 f32) keys, 19 KiB with 16 and 16 (8).
  const bool big = device.caps().max_compute_shared_bytes >= 40 * 1024;
  op->prefill_rows_ = big ? 32 : 16;
  const uint32_t keys = (big ? 32 : 16) / (f16 ? 1 : 2);
  ZINC_ASSIGN_OR_RETURN(op->prefill_, make_pipeline(device, f16 ? "attention_prefill" : "attention_prefill_f32", 6,
                                                    sizeof(PrefillPush), {op->prefill_rows_, keys}));
  if (f16 && caps.subgroup_arithmetic) {
    const std::string clock = options.phase_clock ? "_clock" : "";
    const uint32_t n_buffers = options.phase_clock ? 9 : 8;
    ZINC_ASSIGN_OR_RETURN(op->decode_, make_pipeline(device, "attention_decode" + clock, n_buffers, sizeof(Push),
                                                     {std::max<uint32_t>(caps.min_subgroup_size, 1)}));
    ZINC_ASSIGN_OR_RETURN(op->decode4_, make_pipeline(device, "attention_decode_g4" + clock, n_buffers, sizeof(Push),
                                                      {std::max<uint32_t>(caps.min_subgroup_size, 1)}));
  }
  const bool coopmat = options.emulate_coopmat || (options.coopmat && caps.coopmat_nv_f16 && caps.subgroup_size == 32);
  const uint32_t shared = caps.max_compute_shared_bytes;
  if (f16 && coopmat && coopmat_shared_bytes(256, 32) <= shared) {
    // Tiles of 64 keys for head dims up to 128 where they fit (48 KiB on NVIDIA), else 32.
    const uint32_t keys128 = coopmat_shared_bytes(128, 64) <= shared ? 64 : 32;
    const std::string name = options.emulate_coopmat ? "attention_prefill_coopmat_emu" : "attention_prefill_coopmat";
    auto p128 = make_pipeline(device, name, 6, sizeof(PrefillPush), {128, keys128});
    auto p256 = make_pipeline(device, name, 6, sizeof(PrefillPush), {256, 32});
    if (p128.ok() && p256.ok()) {  // else a driver that lists the matrices but rejects the shader: scalar kernel
      op->coopmat128_ = std::move(*p128);
      op->coopmat256_ = std::move(*p256);
    }
  }
  return op;
}

uint32_t Attention::splits_for(uint32_t n_tokens, uint32_t max_keys) {
  if (n_tokens > 8) return 1;
  return std::clamp<uint32_t>((max_keys + kMinChunk - 1) / kMinChunk, 1, kMaxSplits);
}

uint64_t Attention::partial_floats(uint32_t n_tokens, uint32_t n_q_heads, uint32_t head_dim_v, uint32_t n_splits) {
  return uint64_t(n_tokens) * n_q_heads * n_splits * (head_dim_v + 4);  // m, l, 2 unused, acc
}

Status Attention::record(Commands& cmd, const AttentionArgs& a, const KvLayerBuffers& layer, const StepData& step,
                         uint32_t n_tokens, uint32_t n_splits, const BufferRange* partials,
                         const BufferRange* counters) const {
  const uint32_t n_q = uint32_t(a.q_heads.n_heads), n_kv = layer.n_kv_heads;
  if (layer.f16 != f16_) return error("attention made for %s given an %s cache", f16_ ? "f16" : "f32", layer.f16 ? "f16" : "f32");
  if (n_kv == 0 || n_q % n_kv != 0) return error("attention: %u query heads for %u KV heads", n_q, n_kv);
  if (uint32_t(a.q_heads.head_dim) != layer.head_dim_k)
    return error("attention: query head dim %d, key head dim %u", a.q_heads.head_dim, layer.head_dim_k);
  if (layer.head_dim_k > kMaxDim || layer.head_dim_v > kMaxDim)
    return error("attention: head dims %u/%u over the kernel's %u", layer.head_dim_k, layer.head_dim_v, kMaxDim);
  if (a.out.stride < n_q * layer.head_dim_v) return error("attention: out stride %u too small", a.out.stride);
  if (n_splits == 0 || (n_splits > 1 && !partials)) return error("attention: %u splits without partials", n_splits);
  if (n_tokens == 0) return Status();
  if (n_tokens > 65535) return error("attention: %u tokens exceed one dispatch", n_tokens);
  const uint32_t group = n_q / n_kv, n_qsub = (group + kMaxG - 1) / kMaxG;
  const Activations& g = a.gate ? *a.gate : a.q;
  const uint32_t flags = (a.gate ? 1u : 0u) | (n_splits > 1 ? 2u : 0u);
  const Push push{a.q.stride,     uint32_t(a.q_heads.head_stride), uint32_t(a.q_heads.offset), n_q,
                  layer.head_dim_k, layer.head_dim_v, n_kv, group,
                  g.stride,       uint32_t(a.gate_heads.head_stride), uint32_t(a.gate_heads.offset), flags,
                  a.out.stride,   a.scale, n_splits, kMinChunk,
                  step.positions, step.seq_ids, step.pages, step.max_pages};
  const BufferRange buffers[6] = {a.q.range, whole(*step.buffer), whole(*layer.k), whole(*layer.v),
                                  n_splits > 1 ? *partials : a.out.range, g.range};
  const uint32_t dims_multiple = f16_ ? 8 : 4;  // the prefill kernel reads K/V in 16-byte words
  if (n_splits == 1 && n_tokens > 8 && coopmat128_ && layer.head_dim_k % 16 == 0 && layer.head_dim_v % 16 == 0) {
    // 64 query rows per workgroup: hg query heads of one KV head x bq batch rows.
    const uint32_t dims = std::max(layer.head_dim_k, layer.head_dim_v);
    const uint32_t hg = std::min(group, kCoopmatRows), bq = kCoopmatRows / hg;
    PrefillPush pp{push, hg, bq, {0, 0}};
    pp.base.n_splits = n_tokens;
    pp.base.min_chunk = 0;
    cmd.dispatch(dims <= 128 ? *coopmat128_ : *coopmat256_, buffers, &pp, sizeof pp, n_kv * ((group + hg - 1) / hg),
                 (n_tokens + bq - 1) / bq);
    return Status();
  }
  if (n_splits == 1 && n_tokens > 8 && layer.head_dim_k % dims_multiple == 0 && layer.head_dim_v % dims_multiple == 0) {
    // Query vectors per workgroup: R <= prefill_rows_ with R * (dk + 4) <= prefill_rows_ * 132.
    const uint32_t dims = std::max(layer.head_dim_k, layer.head_dim_v);
    const uint32_t r_max = std::min(prefill_rows_, prefill_rows_ * 132 / (dims + 4));
    const uint32_t hg = std::min(group, r_max), bq = r_max / hg;
    PrefillPush pp{push, hg, bq, {0, 0}};
    pp.base.n_splits = n_tokens;
    pp.base.min_chunk = 0;
    cmd.dispatch(*prefill_, buffers, &pp, sizeof pp, n_kv * ((group + hg - 1) / hg), (n_tokens + bq - 1) / bq);
    return Status();
  }
  const uint32_t dv4 = layer.head_dim_v / 4;
  const bool decode = decode_ && n_tokens <= kDecodeMaxTokens && layer.head_dim_k % 8 == 0 &&
                      layer.head_dim_v % 4 == 0 && dv4 > 0 && 128 % dv4 == 0 &&
                      a.out.stride % 4 == 0;
  if (decode) {
    const bool merge = n_splits > 1 && counters;
    Push dp = push;
    dp.flags |= merge ? 4u : 0u;
    const BufferRange db[9] = {buffers[0], buffers[1], buffers[2], buffers[3], buffers[4], buffers[5],
                               a.out.range, merge ? *counters : a.out.range,
                               phase_clock_ ? whole(*phase_clock_) : a.out.range};
    // Up to 8 query heads per KV head, workgroups of 4: the kernel built for 4 holds half the
    // per-head registers (on the H200: Llama-3-8B decode attention at depth 4096 1.55 -> 1.35 ms a
    // step), and a group of 8 in two workgroups doubles the workgroups of models with few KV heads.
    const uint32_t per_workgroup = group <= 8 ? 4 : kMaxG;
    const Pipeline& kernel = per_workgroup == 4 ? *decode4_ : *decode_;
    const uint32_t groups_x = n_kv * ((group + per_workgroup - 1) / per_workgroup);
    if (phase_clock_ && phase_clock_->size_bytes() < 256ull * groups_x * n_tokens * n_splits)
      return error("attention phase clock of %llu bytes for %u workgroups",
                   (unsigned long long)phase_clock_->size_bytes(), groups_x * n_tokens * n_splits);
    cmd.dispatch(kernel, std::span(db, phase_clock_ ? 9 : 8), &dp, sizeof dp, groups_x, n_tokens, n_splits);
    if (merge) return Status();
  } else {
    cmd.dispatch(*pipeline_, buffers, &push, sizeof push, n_kv * n_qsub, n_tokens, n_splits);
  }
  if (n_splits == 1) return Status();
  cmd.compute_barrier();
  const CombinePush cp{n_q, layer.head_dim_v, n_splits, a.gate ? 1u : 0u, a.out.stride, g.stride,
                       uint32_t(a.gate_heads.head_stride), uint32_t(a.gate_heads.offset)};
  const BufferRange cb[3] = {*partials, g.range, a.out.range};
  cmd.dispatch(*combine_, cb, &cp, sizeof cp, n_q, n_tokens);
  return Status();
}

}  // namespace zinc::vulkan::ops
