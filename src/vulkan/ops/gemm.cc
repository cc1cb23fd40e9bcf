#include "vulkan/ops/gemm.h"

namespace zinc::vulkan::ops {
namespace {

struct Push {
  uint32_t rows, cols, n_tokens, x_stride, y_stride, y_offset, flags, pad;
  uint32_t planes[4];
};
static_assert(sizeof(Push) == 48, "mirrors the push block of shaders/gemm.comp");

}  // namespace

Gemm::~Gemm() = default;

Result<std::unique_ptr<Gemm>> Gemm::create(const Device& device, TensorType type, const GemmOptions& options) {
  ZINC_RETURN_IF_ERROR(weight_format(type).status());
  const DeviceCaps& caps = device.caps();
  std::unique_ptr<Gemm> g(new Gemm());
  g->type_ = type;
  g->coopmat_ = options.coopmat && caps.coopmat_nv_f16 && caps.subgroup_size == 32;
  if (g->coopmat_) {
    auto p = make_pipeline(device, "gemm_coopmat_" + shader_type_suffix(type), 4, sizeof(Push), {});
    if (p.ok()) {
      g->pipeline_ = std::move(*p);
      g->tile_rows_ = g->tile_tokens_ = 128;
      return g;
    }
    g->coopmat_ = false;  // a driver that lists the matrices but rejects the shader: scalar kernel
  }
  ZINC_ASSIGN_OR_RETURN(g->pipeline_, make_pipeline(device, "gemm_" + shader_type_suffix(type), 4, sizeof(Push), {}));
  return g;
}

Status Gemm::record(Commands& cmd, const WeightBuffer& w, const Activations& x, const Activations& y,
                    uint32_t n_tokens, const Activations* residual) const {
  if (w.type() != type_)
    return error("gemm for %s given a %s matrix", std::string(type_name(type_)).c_str(),
                 std::string(type_name(w.type())).c_str());
  if (x.stride % 4 != 0 || x.stride < w.cols())
    return error("gemm x stride %u: must be a multiple of 4 and at least cols %lld", x.stride, (long long)w.cols());
  if (y.stride < w.rows()) return error("gemm y stride %u is less than rows %lld", y.stride, (long long)w.rows());
  if (residual && residual->stride != y.stride)
    return error("gemm residual stride %u differs from y stride %u", residual->stride, y.stride);
  if (n_tokens == 0) return Status();
  const uint32_t token_tiles = (n_tokens + tile_tokens_ - 1) / tile_tokens_;
  if (token_tiles > 65535) return error("gemm of %u tokens: too many", n_tokens);
  for (const WeightChunk& c : w.chunks()) {
    const Push push{c.rows, uint32_t(w.cols()), n_tokens, x.stride, y.stride, c.row_begin, residual ? 1u : 0u, 0,
                    {c.q_word, c.h_word, c.m_word, 0}};
    const BufferRange buffers[4] = {whole(*c.buffer), x.range, y.range, residual ? residual->range : y.range};
    cmd.dispatch(*pipeline_, buffers, &push, sizeof push, (c.rows + tile_rows_ - 1) / tile_rows_, token_tiles);
  }
  return Status();
}

}  // namespace zinc::vulkan::ops
