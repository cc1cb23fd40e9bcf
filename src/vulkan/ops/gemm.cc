#include "vulkan/ops/gemm.h"

#include <algorithm>
#include <iterator>

namespace zinc::vulkan::ops {
namespace {

struct Push {
  uint32_t rows, cols, n_tokens, x_stride, y_stride, y_offset, flags, split_groups;
  uint32_t planes[4];
};
static_assert(sizeof(Push) == 48, "mirrors the push block of shaders/gemm.comp");
struct ReducePush {
  uint32_t rows, n_tokens, splits, part_stride, y_stride, y_offset, flags, pad;
};

// The first kAutoTiles are the ones pick_tile chooses from, largest first. H200, Q4_K 4096x4096
// x 512 tokens: 111 TFLOP/s with 128x128 (128 workgroups), 75 with 128x64 or 64x64.
constexpr GemmTile kTiles[] = {{128, 128, 2}, {128, 64, 4}, {64, 64, 4}, {64, 128, 2}, {128, 32, 8}};
constexpr uint32_t kAutoTiles = 3;
// About one workgroup per multiprocessor of a large GPU (an H200 has 132).
constexpr uint64_t kMinWorkgroups = 128;
// K splits: for shapes under kMinWorkgroups tiles, about kSplitWorkgroups workgroups in all,
// each split at least kMinSplitGroups groups of 32 columns.
constexpr uint64_t kSplitWorkgroups = 384;
constexpr uint32_t kMinSplitGroups = 8, kMaxSplits = 8;

uint32_t split_groups(uint32_t cols, uint32_t splits) {
  const uint32_t groups = (cols + 31) / 32, per = (groups + splits - 1) / splits;
  return per + per % 2;  // the cooperative-matrix kernel takes K in steps of two groups
}

// Shared memory of the kernel: f16 tiles of 64 k (+ 8 of padding) for the rows and tokens.
uint32_t shared_bytes(const GemmTile& t) { return (t.rows + t.tokens) * 144; }

uint64_t workgroups(const GemmTile& t, uint32_t rows, uint32_t n_tokens) {
  return uint64_t((rows + t.rows - 1) / t.rows) * ((n_tokens + t.tokens - 1) / t.tokens);
}

}  // namespace

Gemm::~Gemm() = default;

std::span<const GemmTile> Gemm::coopmat_tiles() { return kTiles; }

uint32_t Gemm::pick_tile(uint32_t rows, uint32_t n_tokens) {
  for (uint32_t i = 0; i < kAutoTiles; ++i)
    if (workgroups(kTiles[i], rows, n_tokens) >= kMinWorkgroups) return i;
  return kAutoTiles - 1;
}

uint32_t Gemm::tile_index(uint32_t rows, uint32_t n_tokens) const {
  return forced_tile_ >= 0 ? uint32_t(forced_tile_) : pick_tile(rows, n_tokens);
}

GemmTile Gemm::tile_for(uint32_t rows, uint32_t n_tokens) const {
  return coopmat_ ? kTiles[tile_index(rows, n_tokens)] : GemmTile{64, 64, 0};
}

uint32_t Gemm::k_splits(uint32_t rows, uint32_t cols, uint32_t n_tokens) const {
  const uint64_t wgs = workgroups(tile_for(rows, n_tokens), rows, n_tokens);
  const uint32_t groups = (cols + 31) / 32;
  if (wgs == 0 || wgs >= kMinWorkgroups || groups < 2 * kMinSplitGroups) return 1;
  const uint64_t want = std::min<uint64_t>((kSplitWorkgroups + wgs - 1) / wgs, groups / kMinSplitGroups);
  const uint32_t splits = uint32_t(std::clamp<uint64_t>(want, 1, kMaxSplits));
  if (splits == 1) return 1;
  const uint32_t per = split_groups(cols, splits);
  return (groups + per - 1) / per;
}

uint64_t Gemm::partial_floats(uint32_t rows, uint32_t cols, uint32_t n_tokens) const {
  const uint32_t splits = k_splits(rows, cols, n_tokens);
  return splits > 1 ? uint64_t(splits) * n_tokens * ((rows + 3) / 4 * 4) : 0;
}

Result<std::unique_ptr<Gemm>> Gemm::create(const Device& device, TensorType type, const GemmOptions& options) {
  ZINC_RETURN_IF_ERROR(weight_format(type).status());
  if (options.tile >= int(std::size(kTiles)))
    return error("gemm tile %d: there are %zu", options.tile, std::size(kTiles));
  const DeviceCaps& caps = device.caps();
  std::unique_ptr<Gemm> g(new Gemm());
  g->type_ = type;
  g->coopmat_ = options.coopmat && caps.coopmat_nv_f16 && caps.subgroup_size == 32;
  g->forced_tile_ = options.tile;
  ZINC_ASSIGN_OR_RETURN(g->reduce_, make_pipeline(device, "splitk_reduce", 3, sizeof(ReducePush), {}));
  if (g->coopmat_) {
    g->tiles_.resize(std::size(kTiles));
    for (uint32_t i = 0; i < std::size(kTiles) && g->coopmat_; ++i) {
      if (options.tile >= 0 ? int(i) != options.tile : i >= kAutoTiles) continue;
      const GemmTile& t = kTiles[i];
      if (shared_bytes(t) > caps.max_compute_shared_bytes) {
        g->coopmat_ = false;
        break;
      }
      auto p = make_pipeline(device, "gemm_coopmat_" + shader_type_suffix(type), 4, sizeof(Push),
                             {t.rows, t.tokens, t.sg_rows});
      if (p.ok())
        g->tiles_[i] = std::move(*p);
      else
        g->coopmat_ = false;  // a driver that lists the matrices but rejects the shader: scalar kernel
    }
    if (g->coopmat_) return g;
    g->tiles_.clear();
  }
  ZINC_ASSIGN_OR_RETURN(g->pipeline_, make_pipeline(device, "gemm_" + shader_type_suffix(type), 4, sizeof(Push), {}));
  return g;
}

Status Gemm::record(Commands& cmd, const WeightBuffer& w, const Activations& x, const Activations& y,
                    uint32_t n_tokens, const Activations* residual, const BufferRange* partials) const {
  if (w.type() != type_)
    return error("gemm for %s given a %s matrix", std::string(type_name(type_)).c_str(),
                 std::string(type_name(w.type())).c_str());
  if (x.stride % 4 != 0 || x.stride < w.cols())
    return error("gemm x stride %u: must be a multiple of 4 and at least cols %lld", x.stride, (long long)w.cols());
  if (y.stride < w.rows()) return error("gemm y stride %u is less than rows %lld", y.stride, (long long)w.rows());
  if (residual && residual->stride != y.stride)
    return error("gemm residual stride %u differs from y stride %u", residual->stride, y.stride);
  if (n_tokens == 0) return Status();
  const uint32_t rows = uint32_t(w.rows()), cols = uint32_t(w.cols());
  const uint32_t splits = partials ? k_splits(rows, cols, n_tokens) : 1;
  const GemmTile tile = tile_for(rows, n_tokens);
  const Pipeline* pipeline = coopmat_ ? tiles_[tile_index(rows, n_tokens)].get() : pipeline_.get();
  // With K split, each split's products go to its own block of partials, rows padded to 4.
  const Activations part{splits > 1 ? *partials : BufferRange{}, (rows + 3) / 4 * 4};
  const Activations& out = splits > 1 ? part : y;
  const Activations* add = splits > 1 ? nullptr : residual;
  const uint32_t token_tiles = (n_tokens + tile.tokens - 1) / tile.tokens;
  // Cooperative-matrix stores need 16-byte aligned matrices: y (and the residual) and the stride.
  const bool aligned = out.stride % 4 == 0 && out.range.offset % 16 == 0 && (!add || add->range.offset % 16 == 0);
  const uint32_t per_split = splits > 1 ? split_groups(cols, splits) : 0;
  for (const WeightChunk& c : w.chunks()) {
    const uint32_t row_tiles = (c.rows + tile.rows - 1) / tile.rows;
    if (row_tiles > 65535 || token_tiles > 65535)
      return error("gemm of %u rows x %u tokens: too many tiles", c.rows, n_tokens);
    const uint32_t flags = (add ? 1u : 0u) | (aligned && c.row_begin % 4 == 0 ? 2u : 0u);
    const Push push{c.rows, cols, n_tokens, x.stride, out.stride, c.row_begin, flags, per_split,
                    {c.q_word, c.h_word, c.m_word, 0}};
    const BufferRange buffers[4] = {whole(*c.buffer), x.range, out.range, add ? add->range : out.range};
    // The scalar kernel takes row tiles along x; the cooperative-matrix one token tiles, so that
    // the workgroups sharing a weight tile run together.
    if (coopmat_)
      cmd.dispatch(*pipeline, buffers, &push, sizeof push, token_tiles, row_tiles, splits);
    else
      cmd.dispatch(*pipeline, buffers, &push, sizeof push, row_tiles, token_tiles, splits);
  }
  if (splits == 1) return Status();
  cmd.compute_barrier();
  const ReducePush rp{rows, n_tokens, splits, part.stride, y.stride, 0, residual ? 1u : 0u, 0};
  const BufferRange rb[3] = {part.range, y.range, residual ? residual->range : y.range};
  const Grid grid = grid_for((rows * n_tokens + 255) / 256);
  cmd.dispatch(*reduce_, rb, &rp, sizeof rp, grid.x, grid.y);
  return Status();
}

}  // namespace zinc::vulkan::ops
