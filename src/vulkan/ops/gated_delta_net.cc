#include "vulkan/ops/gated_delta_net.h"

namespace zinc::vulkan::ops {
namespace {
struct Push {
  uint32_t n_k_heads, d_k, n_v_heads, d_v, grouped;
  float eps;
  uint32_t n_tokens, qkv_stride, gate_stride, out_stride, slot_stride, state_offset;
};
constexpr uint32_t kRowsPerGroup = 4;    // shaders/gated_delta_net.comp
constexpr uint32_t kLanes = 32;          // a row's lanes there
constexpr uint32_t kShortDk = 128;       // the most d_k the pipeline with 4 columns a lane takes
}  // namespace

GatedDeltaNet::~GatedDeltaNet() = default;

Result<std::unique_ptr<GatedDeltaNet>> GatedDeltaNet::create(const Device& device, bool use_subgroups,
                                                             DeltaNetKernel kernel, uint32_t chunked_rows) {
  if (device.caps().max_workgroup_invocations < 256) return error("gated_delta_net needs 256-thread workgroups");
  if (chunked_rows != 8 && chunked_rows != 16)
    return error("gated_delta_net: %u rows per chunked workgroup, 8 or 16 supported", chunked_rows);
  const bool sg = use_subgroups && device.caps().subgroup_arithmetic;
  std::unique_ptr<GatedDeltaNet> op(new GatedDeltaNet());
  op->kernel_ = kernel;
  op->chunked_rows_ = chunked_rows;
  const char* tokens = sg ? "gated_delta_net_sg" : "gated_delta_net";
  ZINC_ASSIGN_OR_RETURN(op->tokens_, make_pipeline(device, tokens, 8, sizeof(Push), {kMaxDk / kLanes}));
  ZINC_ASSIGN_OR_RETURN(op->tokens_short_, make_pipeline(device, tokens, 8, sizeof(Push), {kShortDk / kLanes}));
  ZINC_ASSIGN_OR_RETURN(op->chunked_, make_pipeline(device, chunked_rows == 8 ? "gated_delta_net_chunked_r8"
                                                                               : "gated_delta_net_chunked",
                                                    8, sizeof(Push), {}));
  return op;
}

Status GatedDeltaNet::record(Commands& cmd, const DeltaNetShape& s, const Activations& qkv, const Activations& beta,
                             const Activations& alpha, const BufferRange& a, const BufferRange& dt_bias,
                             const StateSlots& slots, uint32_t state_offset, const Activations& out,
                             uint32_t n_tokens) const {
  if (s.d_k == 0 || s.d_k > kMaxDk || s.d_v == 0 || s.n_k_heads == 0 || s.n_v_heads == 0)
    return error("gated_delta_net: d_k %u (1 to %u), d_v %u, heads %u/%u", s.d_k, kMaxDk, s.d_v, s.n_k_heads,
                 s.n_v_heads);
  if (s.grouped ? s.n_v_heads % s.n_k_heads != 0 : false)
    return error("gated_delta_net: %u value heads do not group over %u key heads", s.n_v_heads, s.n_k_heads);
  if (qkv.stride < 2 * s.n_k_heads * s.d_k + s.n_v_heads * s.d_v || out.stride < s.n_v_heads * s.d_v)
    return error("gated_delta_net: qkv stride %u or out stride %u too small", qkv.stride, out.stride);
  if (beta.stride != alpha.stride || beta.stride < s.n_v_heads)
    return error("gated_delta_net: beta stride %u and alpha stride %u must be equal and at least %u", beta.stride,
                 alpha.stride, s.n_v_heads);
  if (n_tokens == 0) return Status();
  const Push push{s.n_k_heads, s.d_k,        s.n_v_heads, s.d_v,      s.grouped ? 1u : 0u, s.eps,
                  n_tokens,    qkv.stride, beta.stride, out.stride, slots.slot_floats,   state_offset};
  const BufferRange buffers[8] = {qkv.range, beta.range, alpha.range, a, dt_bias, slots.seq_ids, slots.state,
                                  out.range};
  const bool chunked = s.d_k <= kMaxChunkedDk && (kernel_ == DeltaNetKernel::kChunked ||
                                                  (kernel_ == DeltaNetKernel::kAuto && n_tokens >= kChunkedMinTokens));
  const uint32_t rows = chunked ? chunked_rows_ : kRowsPerGroup;
  const Pipeline& tokens = s.d_k <= kShortDk ? *tokens_short_ : *tokens_;
  cmd.dispatch(chunked ? *chunked_ : tokens, buffers, &push, sizeof push, s.n_v_heads * ((s.d_v + rows - 1) / rows));
  return Status();
}

}  // namespace zinc::vulkan::ops
