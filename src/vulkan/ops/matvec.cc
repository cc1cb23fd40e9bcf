#include "vulkan/ops/matvec.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>

#include "vulkan/ops/op_util.h"

namespace zinc::vulkan::ops {
namespace {

struct Push {
  uint32_t rows, cols, n_tokens, x_stride, y_stride, y_offset, flags;
  float eps;
  uint32_t planes0[4], planes1[4];
  uint32_t rows_per_group, k_slices;  // matvec_staged.comp only
  // The per-head epilogue: conv_taps the head norm's eps (bits), slot_floats the head stride,
  // state_offset the first counter word.
  uint32_t conv_taps, conv_channels, slot_floats, state_offset;
  uint32_t gate_stride, norm_group;
  uint32_t head_dim, n_pairs, table_offset, row_words;  // matvec_staged.comp only
  uint32_t pos_offset, seq_offset, pages_offset, max_pages;
};
static_assert(sizeof(Push) == 128, "mirrors the push blocks of shaders/matvec.comp and matvec_staged.comp");
// w0, w1, x, y, residual, norm weight, gate, conv kernel, seq ids, state, normalised x out,
// KV pool, step data, head norm weight, head counters
constexpr uint32_t kBindings = 15;
constexpr uint32_t kStagedBytesPerGroup = 56;  // int8 codes, scale and sums of one group of x
constexpr uint32_t kHeadSharedBytes = 4 * OutputRopeKv::kMaxHeadDim + 16;  // s_head, s_heads_done
constexpr uint32_t kMaxHeadsPerWorkgroup = 32;  // bits of s_heads_done

// Rows per workgroup: enough loads in flight per thread without spilling registers.
uint32_t default_rows(const WeightFormat& f) {
  return f.q_bytes > 32 ? 2 : 4;  // F16, BF16, F32: 64-128 bytes of codes per group and row
}

// Why the epilogue cannot serve these heads of w, or null.
const char* rope_kv_refusal(const OutputRopeKv& e, const WeightBuffer& w) {
  if (!e.step || !e.step->buffer) return "no step data";
  if (e.head_dim == 0 || e.head_dim % 2 != 0 || w.rows() % e.head_dim != 0) return "rows are not whole heads of even size";
  if (2 * e.n_pairs > e.head_dim) return "more pairs than the head has";
  if (!e.per_head) {
    if (!e.adjacent || e.norm_weight) return "NEOX pairs or a norm need the per-head epilogue";
    return nullptr;
  }
  if (e.head_dim > OutputRopeKv::kMaxHeadDim) return "head past kMaxHeadDim";
  if (w.chunks().size() != 1) return "a chunked matrix";
  if (!e.counters.buffer) return "no head counters";
  if (e.head_stride == 0) return nullptr;
  if (e.head_stride % 2 != 0 || e.head_stride < e.head_dim || w.rows() % e.head_stride != 0)
    return "rows are not whole head strides of at least the head";
  if (e.pool && e.head_stride != e.head_dim) return "stored heads must be packed";
  return nullptr;
}

}  // namespace

Matvec::~Matvec() = default;

Result<std::unique_ptr<Matvec>> Matvec::create(const Device& device, TensorType type, const MatvecOptions& options) {
  ZINC_ASSIGN_OR_RETURN(const WeightFormat f, weight_format(type));
  const DeviceCaps& caps = device.caps();
  std::unique_ptr<Matvec> m(new Matvec());
  m->type_ = type;
  m->options_ = options;
  m->int8_ = options.int8 && caps.int8_dot && int8_capable(type);
  const bool sg = options.subgroup && caps.subgroup_arithmetic;
  const uint32_t group_size = options.group_size ? options.group_size : 128;
  if ((group_size & (group_size - 1)) != 0 || group_size > caps.max_workgroup_invocations)
    return error("matvec workgroup of %u threads: not a power of two or over the device's %u", group_size,
                 caps.max_workgroup_invocations);
  const uint32_t min_sg = sg ? std::max<uint32_t>(caps.min_subgroup_size, 1) : 1;
  const uint32_t mats = options.swiglu ? 2 : 1;
  uint32_t rows = options.rows ? options.rows : default_rows(f);
  while (rows > 1 && (uint64_t(mats) * rows + 1) * (group_size / min_sg) * 4 + 64 > caps.max_compute_shared_bytes) rows /= 2;
  m->rows_per_group_ = rows;
  const std::string shader = "matvec_" + shader_type_suffix(type) + (m->int8_ ? "_int8" : "") + (sg ? "_sg" : "");
  ZINC_ASSIGN_OR_RETURN(m->pipeline_, make_pipeline(device, shader, kBindings, sizeof(Push),
                                                    {group_size, rows, options.swiglu ? 1u : 0u, min_sg}));
  const uint32_t steps = options.steps ? options.steps : 2;
  if (steps > 4) return error("matvec steps %u: at most 4", steps);
  const bool clocked = options.phase_clock != nullptr, px = options.prequantized_x;
  const bool variant_type = type == TensorType::Q4_K || type == TensorType::Q6_K;
  const bool staged = m->int8_ && sg && options.staged && caps.subgroup_shuffle;
  if ((clocked || px) && !(staged && variant_type))
    return error("matvec %s: needs the staged int8 kernel, for Q4_K or Q6_K",
                 clocked ? "phase clock" : "prequantized x");
  if (clocked && !caps.shader_clock) return error("matvec phase clock: the device has no VK_KHR_shader_clock");
  if (px && options.k_slices > 1) return error("matvec prequantized x: no k_slices");
  if (options.topk && !(staged && type == TensorType::Q8_0 && !clocked && !px))
    return error("matvec top-k: needs the staged int8 kernel, for Q8_0");
  if (options.norm_out && (options.topk || clocked || px)) return error("matvec next-norm variant: on its own");
  if (staged) {
    m->subgroup_size_ = std::max<uint32_t>(caps.subgroup_size, 1);
    // 256 threads for up to 4096 columns, 512 above (fewer workgroups staging the long x).
    const uint32_t max_threads = caps.max_workgroup_invocations;
    for (uint32_t max_groups : {128u, 512u, 4096u}) {
      const uint32_t threads = options.group_size ? group_size : std::min(max_groups > 128 ? 512u : 256u, max_threads);
      // Per subgroup: s_ss, s_part, s_head_red (and s_norm_out).
      const uint64_t reserved = uint64_t(threads / min_sg) * (options.norm_out ? 20 : 16) + 64 + kHeadSharedBytes;
      const uint64_t fit = caps.max_compute_shared_bytes > reserved
                               ? (caps.max_compute_shared_bytes - reserved) / kStagedBytesPerGroup : 0;
      const uint32_t groups = uint32_t(std::min<uint64_t>(max_groups, fit));
      if (groups < 32 || (!m->staged_.empty() && groups <= m->staged_.back().max_groups)) continue;
      const std::string name =
          "matvec_staged_" + shader_type_suffix(type) + (px ? "_px" : "") + (clocked ? "_clock" : "") +
          (options.topk ? "_topk" : "") + (options.norm_out ? "_normout" : "");
      ZINC_ASSIGN_OR_RETURN(auto p, make_pipeline(device, name, kBindings + (clocked ? 1 : 0), sizeof(Push),
                                                  {threads, groups, options.swiglu ? 1u : 0u, min_sg, steps}));
      m->staged_.push_back({groups, threads, std::move(p)});
    }
  }
  return m;
}

// Two values per subgroup step (two rows, or one row of both SwiGLU matrices), one step per
// subgroup (256 threads: 16 rows or 8 SwiGLU rows per workgroup). On the H200 this beat 128
// threads with one or two steps (4096x4096 Q4_K 10.7 -> 9.9 us, 14336x4096 21.5 -> 19.6 us;
// 4096x14336 with 512 threads 35.5 -> 16.9 us); splitting a step's groups over several subgroups
// (k_slices) was slower there, so it is only available through the options. Where one step per
// subgroup gives more than kPassWorkgroups workgroups, each subgroup takes several steps in turn
// (passes), so that the workgroups fit about one wave (the H200 holds ~400 of the 256-thread
// kernel's) and fewer of them stage x: on the H200 the SwiGLU pair 14336x4096 (Q4_K) takes 26.7
// us in 448 workgroups against 31.1 in 1792 and 29.9 in 224; small matrices are fastest with the
// most workgroups (4096x4096: 9.9 us in 256 against 10.8 in 128). Llama-3-8B decode by the
// passes' rule (the SwiGLU pair in 4-8 passes), workgroups / N rounded down: N = 240 331.8 tok/s,
// 280 325.7, 300 335.6, 448 333.0, 600 319.2, 900 299.4. Rounded up with 400, which leaves the
// 8B's and the 30B's products as 300 rounded down did, the 35B's 8192-row products (delta-net
// qkv, gated attention q) take 2 passes instead of 1 in 512 workgroups: tg128 291.5 -> 307.0.
// SwiGLU pairs take up to 600 workgroups a pass (session 38, H100, the kernels of that day: the
// 8B's pair in 3 passes, 598 workgroups, instead of 5, 359: tg128 318.2 -> 323.3; 4 passes 320.9,
// 6 312.1, 2 303.5, 1 305.7), while 600 for every product cost the 35B 0.6 % (its 8192-row
// products in 1 pass).
Matvec::StagedShape Matvec::staged_shape(const Staged& staged, uint32_t rows) const {
  if (options_.rows) return {options_.rows, options_.k_slices ? options_.k_slices : 1};
  constexpr uint32_t kMaxPasses = 8;
  const uint32_t kPassWorkgroups = options_.swiglu ? 600 : 400;
  const uint32_t per_pass = std::max<uint32_t>(staged.threads / subgroup_size_, 1) * (options_.swiglu ? 1 : 2);
  const uint32_t workgroups = (rows + per_pass - 1) / per_pass;
  const uint32_t passes = std::clamp<uint32_t>((workgroups + kPassWorkgroups - 1) / kPassWorkgroups, 1, kMaxPasses);
  return {per_pass * passes, 1};
}

const Matvec::Staged* Matvec::staged_for(int64_t cols) const {
  if (cols % 32 != 0) return nullptr;
  for (const Staged& s : staged_)
    if (uint64_t(cols) / 32 <= s.max_groups) return &s;
  return nullptr;
}

bool Matvec::uses_staged(int64_t cols) const { return staged_for(cols) != nullptr; }

uint32_t Matvec::norm_partials(const WeightBuffer& w) const {
  const Staged* staged = staged_for(w.cols());
  if (!staged || !options_.norm_out || options_.swiglu || w.chunks().size() != 1) return 0;
  const uint32_t rows = w.chunks()[0].rows, per = staged_shape(*staged, rows).rows_per_group;
  return (rows + per - 1) / per;
}

bool Matvec::supports_gated_norm(int64_t cols, int64_t group) const {
  return !options_.swiglu && group > 0 && group % 32 == 0 && cols % group == 0 && uses_staged(cols);
}

Status Matvec::record(Commands& cmd, const WeightBuffer& w, const Activations& x, const Activations& y,
                      uint32_t n_tokens, const Activations* residual, const InputNorm* norm) const {
  return record_fused(cmd, w, x, y, n_tokens, {residual, norm, nullptr, nullptr, nullptr});
}

Status Matvec::record_fused(Commands& cmd, const WeightBuffer& w, const Activations& x, const Activations& y,
                            uint32_t n_tokens, const MatvecFusion& fusion) const {
  if (options_.swiglu) return error("this matvec was made for SwiGLU pairs: use record_swiglu");
  return record_pair(cmd, w, nullptr, x, y, n_tokens, fusion);
}

Status Matvec::record_swiglu(Commands& cmd, const WeightBuffer& gate, const WeightBuffer& up, const Activations& x,
                             const Activations& y, uint32_t n_tokens, const Activations* residual,
                             const InputNorm* norm) const {
  if (!options_.swiglu) return error("this matvec was not made for SwiGLU pairs");
  if (up.type() != gate.type() || up.rows() != gate.rows() || up.cols() != gate.cols() ||
      up.chunks().size() != gate.chunks().size())
    return error("SwiGLU matrices differ: gate %s %lld x %lld, up %s %lld x %lld",
                 std::string(type_name(gate.type())).c_str(), (long long)gate.rows(), (long long)gate.cols(),
                 std::string(type_name(up.type())).c_str(), (long long)up.rows(), (long long)up.cols());
  return record_pair(cmd, gate, &up, x, y, n_tokens, {residual, norm, nullptr, nullptr, nullptr});
}

Status Matvec::record_pair(Commands& cmd, const WeightBuffer& w0, const WeightBuffer* w1, const Activations& x,
                           const Activations& y, uint32_t n_tokens, const MatvecFusion& fusion) const {
  const Activations* residual = fusion.residual;
  const InputNorm* norm = fusion.norm;
  const GatedInputNorm* gated = fusion.gated;
  const OutputConv* conv = fusion.conv;
  if (w0.type() != type_)
    return error("matvec for %s given a %s matrix", std::string(type_name(type_)).c_str(),
                 std::string(type_name(w0.type())).c_str());
  if (n_tokens == 0) return Status();
  if (x.stride % 4 != 0 || x.stride < w0.cols())
    return error("matvec x stride %u: must be a multiple of 4 and at least cols %lld", x.stride, (long long)w0.cols());
  if (y.stride < w0.rows()) return error("matvec y stride %u is less than rows %lld", y.stride, (long long)w0.rows());
  if (residual && residual->stride != y.stride)
    return error("matvec residual stride %u differs from y stride %u", residual->stride, y.stride);
  if (norm && gated) return error("matvec with both a whole-row and a gated input norm");
  if (gated) {
    if (!supports_gated_norm(w0.cols(), gated->group))
      return error("matvec %s %lld x %lld: no gated input norm in groups of %u", std::string(type_name(type_)).c_str(),
                   (long long)w0.rows(), (long long)w0.cols(), gated->group);
    if (gated->gate.stride % 4 != 0 || gated->gate.stride < w0.cols())
      return error("matvec gate stride %u: must be a multiple of 4 and at least cols %lld", gated->gate.stride,
                   (long long)w0.cols());
  }
  const bool write_norm = norm && norm->out;
  if (write_norm && (w1 || norm->out->stride != x.stride || w0.chunks().size() != 1))
    return error("matvec: the normalised x is written only by a single-chunk product and at x's stride");
  if (conv && (w1 || residual || conv->taps == 0 || conv->taps > OutputConv::kMaxTaps))
    return error("matvec conv epilogue of %u taps%s", conv->taps, w1 || residual ? " with a pair or residual" : "");
  const OutputRopeKv* rope_kv = fusion.rope_kv;
  const NormOut* norm_out = fusion.norm_out;
  if (norm_out) {
    if (w1 || conv || rope_kv || write_norm || norm_partials(w0) == 0)
      return error("matvec next-norm epilogue: needs the staged kernel on one chunk, alone (no pair, conv, RoPE "
                   "or normalised x out)");
    if (norm_out->weighted.stride != y.stride)
      return error("matvec weighted rows stride %u differs from y stride %u", norm_out->weighted.stride, y.stride);
  }
  const TopK* topk = fusion.topk;
  if (topk) {
    if (!options_.topk || w1 || conv || rope_kv || norm_out || write_norm || w0.chunks().size() != 1 ||
        !staged_for(w0.cols()))
      return error("matvec top-k: needs a top-k matvec's staged kernel on one chunk, alone");
    if (topk->k == 0 || topk->k > w0.rows() || w0.rows() > TopK::kMaxRows)
      return error("matvec top-%u of %lld rows (at most %u rows)", topk->k, (long long)w0.rows(), TopK::kMaxRows);
  }
  if (options_.prequantized_x && (gated || conv || rope_kv || write_norm || x.stride % 32 != 0 || w0.cols() % 32 != 0))
    return error("matvec prequantized x: needs x's stride and cols multiples of 32, no gated norm, epilogue or "
                 "written norm");
  if (rope_kv) {
    if (w1 || residual || conv || write_norm || !staged_for(w0.cols()))
      return error("matvec rope/KV epilogue: needs the staged kernel alone (no pair, residual, conv or normalised x out)");
    if (const char* why = rope_kv_refusal(*rope_kv, w0))
      return error("matvec rope/KV epilogue on %lld rows (head dim %u, stride %u, %u pairs): %s", (long long)w0.rows(),
                   rope_kv->head_dim, rope_kv->head_stride, rope_kv->n_pairs, why);
  }
  for (size_t i = 0; i < w0.chunks().size(); ++i) {
    const WeightChunk& c0 = w0.chunks()[i];
    if (rope_kv && (c0.row_begin % 2 != 0 || c0.rows % 2 != 0))
      return error("matvec rope/KV epilogue on a chunk of odd rows");
    const WeightChunk& c1 = w1 ? w1->chunks()[i] : c0;
    if (c1.rows != c0.rows) return error("SwiGLU matrices are chunked differently");
    const uint32_t flags = (residual ? 1u : 0u) | (norm ? 2u : 0u) | (conv ? 4u : 0u) | (gated ? 8u : 0u) |
                           (write_norm ? 16u : 0u) | (rope_kv && rope_kv->n_pairs && !rope_kv->per_head ? 32u : 0u) |
                           (rope_kv && rope_kv->pool ? 64u : 0u) | (rope_kv && rope_kv->per_head ? 128u : 0u) |
                           (rope_kv && rope_kv->per_head && rope_kv->adjacent ? 256u : 0u) |
                           (rope_kv && rope_kv->norm_weight ? 512u : 0u) | (norm_out ? 1024u : 0u) |
                           (topk ? 2048u : 0u);
    const uint32_t taps = conv ? conv->taps : rope_kv && rope_kv->norm_weight ? std::bit_cast<uint32_t>(rope_kv->norm_eps) : 0;
    const bool per_head = rope_kv && rope_kv->per_head;
    const uint32_t head_stride = per_head ? (rope_kv->head_stride ? rope_kv->head_stride : rope_kv->head_dim) : 0;
    const float eps = norm ? norm->eps : gated ? gated->eps : 0.f;
    Push push{c0.rows, uint32_t(w0.cols()), n_tokens, x.stride, y.stride, c0.row_begin, flags, eps,
              {c0.q_word, c0.h_word, c0.m_word, 0}, {c1.q_word, c1.h_word, c1.m_word, 0}, 0, 1,
              taps, uint32_t(w0.rows()),
              conv ? conv->slots.slot_floats : norm_out ? norm_partials(w0) : head_stride,
              conv ? conv->state_offset : per_head ? rope_kv->counter_word : 0, gated ? gated->gate.stride : 0,
              gated ? gated->group : 32,
              rope_kv ? rope_kv->head_dim : 2, rope_kv ? rope_kv->n_pairs : topk ? topk->k : 0,
              rope_kv ? rope_kv->table_offset : topk ? topk->counter_word : 0,
              uint32_t(w0.rows() / 2), rope_kv ? rope_kv->step->positions : 0, rope_kv ? rope_kv->step->seq_ids : 0,
              rope_kv ? rope_kv->step->pages : 0, rope_kv ? rope_kv->step->max_pages : 0};
    const BufferRange norm_w = norm ? norm->weight : gated ? gated->weight : x.range;
    const BufferRange buffers[kBindings + 1] = {whole(*c0.buffer), whole(*c1.buffer), x.range, y.range,
                                            residual ? residual->range : y.range, norm_w,
                                            gated ? gated->gate.range : x.range,
                                            conv ? conv->kernel : norm_out ? norm_out->weight : x.range,
                                            conv ? conv->slots.seq_ids : x.range,
                                            conv ? conv->slots.state : norm_out ? norm_out->partials : y.range,
                                            write_norm ? norm->out->range : norm_out ? norm_out->weighted.range : x.range,
                                            rope_kv && rope_kv->pool ? whole(*rope_kv->pool) : topk ? topk->ids : y.range,
                                            rope_kv ? whole(*rope_kv->step->buffer) : x.range,
                                            rope_kv && rope_kv->norm_weight ? *rope_kv->norm_weight : x.range,
                                            per_head ? rope_kv->counters : topk ? topk->counters : y.range,
                                            options_.phase_clock ? whole(*options_.phase_clock) : y.range};
    if (const Staged* staged = write_norm ? nullptr : staged_for(w0.cols())) {
      StagedShape shape = staged_shape(*staged, c0.rows);
      if (per_head && shape.rows_per_group / head_stride + 2 > kMaxHeadsPerWorkgroup)
        return error("matvec head epilogue: %u rows a workgroup meet more than %u heads of stride %u",
                     shape.rows_per_group, kMaxHeadsPerWorkgroup, head_stride);
      push.rows_per_group = shape.rows_per_group;
      push.k_slices = shape.k_slices;
      const Grid grid = grid_for((c0.rows + push.rows_per_group - 1) / push.rows_per_group);
      if (options_.phase_clock && options_.phase_clock->size_bytes() < kPhaseClockBytes * grid.x * grid.y)
        return error("matvec phase clock of %llu bytes for %u workgroups",
                     (unsigned long long)options_.phase_clock->size_bytes(), grid.x * grid.y);
      const size_t n_buffers = kBindings + (options_.phase_clock ? 1 : 0);
      cmd.dispatch(*staged->pipeline, std::span(buffers, n_buffers), &push, sizeof push, grid.x, grid.y);
      continue;
    }
    if (gated) return error("the gated input norm needs the staged kernel");
    if (options_.phase_clock || options_.prequantized_x)
      return error("matvec phase clock or prequantized x: this product does not take the staged kernel");
    const Grid grid = grid_for((c0.rows + rows_per_group_ - 1) / rows_per_group_);
    cmd.dispatch(*pipeline_, std::span(buffers, kBindings), &push, sizeof push, grid.x, grid.y);
  }
  return Status();
}

std::vector<uint32_t> Matvec::prequantize_x(const float* x, uint32_t n_tokens, uint32_t stride, uint32_t cols,
                                            const float* norm_weight) {
  const uint32_t groups = stride / 32;
  std::vector<uint32_t> out(size_t(n_tokens) * groups * kPrequantWordsPerGroup, 0);
  for (uint32_t t = 0; t < n_tokens; ++t)
    for (uint32_t g = 0; g < cols / 32; ++g) {
      float v[32], amax = 0, ss = 0, sums[2] = {0, 0};
      for (uint32_t i = 0; i < 32; ++i) {
        const float xv = x[size_t(t) * stride + 32 * g + i];
        ss += xv * xv;
        v[i] = norm_weight ? xv * norm_weight[32 * g + i] : xv;
        amax = std::max(amax, std::fabs(v[i]));
        sums[i / 16] += v[i];
      }
      uint32_t* r = out.data() + (size_t(t) * groups + g) * kPrequantWordsPerGroup;
      int code_sums[2] = {0, 0};
      for (uint32_t i = 0; i < 32; ++i) {  // packSnorm4x8 of v / amax
        const int q = amax > 0 ? int(std::lround(std::clamp(v[i] / amax, -1.f, 1.f) * 127.f)) : 0;
        r[i / 4] |= uint32_t(uint8_t(int8_t(q))) << (8 * (i % 4));
        code_sums[i / 16] += q;
      }
      const float f[4] = {amax / 127.f, sums[0], sums[1], ss};
      std::memcpy(r + 8, f, sizeof f);
      r[12] = uint32_t(code_sums[0]);
      r[13] = uint32_t(code_sums[1]);
    }
  return out;
}

}  // namespace zinc::vulkan::ops
