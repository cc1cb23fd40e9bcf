#include "vulkan/ops/get_rows.h"

namespace zinc::vulkan::ops {
namespace {
struct Push {
  uint32_t rows, cols, row_begin, out_stride;
  uint32_t planes[4];
  uint32_t ids_offset;
  float scale;
};
}  // namespace

GetRows::~GetRows() = default;

Result<std::unique_ptr<GetRows>> GetRows::create(const Device& device, TensorType type) {
  ZINC_RETURN_IF_ERROR(weight_format(type).status());
  std::unique_ptr<GetRows> g(new GetRows());
  g->type_ = type;
  ZINC_ASSIGN_OR_RETURN(g->pipeline_, make_pipeline(device, "get_rows_" + shader_type_suffix(type), 3, sizeof(Push), {}));
  return g;
}

Status GetRows::record(Commands& cmd, const WeightBuffer& w, const BufferRange& ids, const Activations& out,
                       uint32_t n_tokens, uint32_t ids_offset, float scale) const {
  if (w.type() != type_)
    return error("get_rows for %s given a %s matrix", std::string(type_name(type_)).c_str(),
                 std::string(type_name(w.type())).c_str());
  if (out.stride % 4 != 0 || out.stride < w.cols())
    return error("get_rows out stride %u: must be a multiple of 4 and at least cols %lld", out.stride,
                 (long long)w.cols());
  if (n_tokens == 0) return Status();
  const Grid grid = grid_for(n_tokens);
  for (const WeightChunk& c : w.chunks()) {
    const Push push{c.rows, uint32_t(w.cols()), c.row_begin, out.stride, {c.q_word, c.h_word, c.m_word, 0}, ids_offset, scale};
    const BufferRange buffers[3] = {whole(*c.buffer), ids, out.range};
    cmd.dispatch(*pipeline_, buffers, &push, sizeof push, grid.x, grid.y);
  }
  return Status();
}

}  // namespace zinc::vulkan::ops
