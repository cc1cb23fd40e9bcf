#include "vulkan/ops/moe_gemm.h"

#include <algorithm>

namespace zinc::vulkan::ops {
namespace {

struct GroupPush {
  uint32_t n_slots, n_expert, max_tiles, pad;
};
struct GemmPush {
  uint32_t rows, cols, k, x_stride, y_stride, pad[3];
  uint32_t planes0[4], planes1[4];
};
static_assert(sizeof(GemmPush) == 64, "mirrors the push block of shaders/moe_gemm.comp");
// Workgroup size of the cooperative-matrix kernel (tiles of kCoopmatThreads * 16 / slots rows):
// on the H200 128 threads (159-183 registers, more workgroups per SM) beat 256: the 30B's gate/up
// expert GEMM 561 -> 488 us, pp512 30B 8512 -> 8837-8853, 35B 7620 -> 7845-7862 tok/s.
constexpr uint32_t kCoopmatThreads = 128;
struct CombinePush {
  uint32_t rows, n_tokens, k, in_stride, out_stride, flags;
};

}  // namespace

MoeGemm::~MoeGemm() = default;

uint32_t MoeGemm::slot_tile_for(uint32_t n_slots, uint32_t n_expert) {
  return n_slots < 48 * n_expert ? 32 : 64;
}

uint32_t MoeGemm::max_tiles(uint32_t n_slots, uint32_t n_expert) {
  return (n_slots + 31) / 32 + std::min(n_slots, n_expert);
}

uint32_t MoeGemm::tile_for(uint32_t n_slots, uint32_t n_expert) const {
  return slot_tile_ ? slot_tile_ : slot_tile_for(n_slots, n_expert);
}

Result<std::unique_ptr<MoeGemm>> MoeGemm::create(const Device& device, TensorType type, bool swiglu,
                                                 uint32_t slot_tile, bool coopmat) {
  ZINC_RETURN_IF_ERROR(weight_format(type).status());
  if (slot_tile != 0 && slot_tile != 32 && slot_tile != 64) return error("moe_gemm: slot tile %u, not 32 or 64", slot_tile);
  std::unique_ptr<MoeGemm> m(new MoeGemm());
  m->type_ = type;
  m->swiglu_ = swiglu;
  m->slot_tile_ = slot_tile;
  const DeviceCaps& caps = device.caps();
  m->coopmat_ = coopmat && caps.coopmat_nv_f16 && caps.subgroup_size == 32;
  for (uint32_t i = 0; i < 2; ++i) {
    ZINC_ASSIGN_OR_RETURN(m->group_[i], make_pipeline(device, "moe_group", 3, sizeof(GroupPush), {32u << i}));
  }
  auto make_gemms = [&](const std::string& shader) -> Status {
    for (uint32_t i = 0; i < 2; ++i) {
      ZINC_ASSIGN_OR_RETURN(m->gemm_[i], make_pipeline(device, shader + shader_type_suffix(type), 6, sizeof(GemmPush),
                                                       {swiglu ? 1u : 0u, 32u << i, kCoopmatThreads}));
    }
    return Status();
  };
  // A driver that lists the matrices but rejects the shader gets the scalar kernel.
  if (m->coopmat_ && !make_gemms("moe_gemm_coopmat_").ok()) m->coopmat_ = false;
  if (!m->coopmat_) ZINC_RETURN_IF_ERROR(make_gemms("moe_gemm_"));
  ZINC_ASSIGN_OR_RETURN(m->combine_, make_pipeline(device, "moe_combine", 3, sizeof(CombinePush), {}));
  return m;
}

Status MoeGemm::record_group(Commands& cmd, const BufferRange& ids, uint32_t n_expert, const MoeScratch& scratch,
                             uint32_t n_tokens, uint32_t k) const {
  if (n_expert == 0 || n_expert > kMaxExperts) return error("moe_gemm: %u experts, 1 to %u", n_expert, kMaxExperts);
  const uint32_t n_slots = n_tokens * k;
  if (n_slots == 0) return Status();
  const GroupPush push{n_slots, n_expert, max_tiles(n_slots, n_expert), 0};
  const BufferRange buffers[3] = {ids, scratch.order, scratch.tiles};
  cmd.dispatch(*group_[tile_for(n_slots, n_expert) == 64], buffers, &push, sizeof push, 1);
  return Status();
}

Status MoeGemm::record_gemm(Commands& cmd, const WeightBuffer& w0, const WeightBuffer* w1, uint32_t n_expert,
                            const Activations& x, const MoeScratch& scratch, const Activations& y, uint32_t n_slots,
                            uint32_t k) const {
  if (w0.type() != type_)
    return error("moe_gemm for %s given a %s matrix", std::string(type_name(type_)).c_str(),
                 std::string(type_name(w0.type())).c_str());
  if (n_expert == 0 || w0.rows() % n_expert != 0)
    return error("moe_gemm: %lld stacked rows do not split into %u experts", (long long)w0.rows(), n_expert);
  if (w0.chunks().size() != 1 || (w1 && w1->chunks().size() != 1))
    return error("moe_gemm: stacked experts (%lld rows) must fit one buffer, got %zu chunks", (long long)w0.rows(),
                 w0.chunks().size());
  if (w1 && (w1->type() != w0.type() || w1->rows() != w0.rows() || w1->cols() != w0.cols()))
    return error("moe_gemm: gate and up matrices differ");
  const uint32_t rows = uint32_t(w0.rows() / n_expert);
  if (x.stride % 4 != 0 || x.stride < w0.cols())
    return error("moe_gemm x stride %u: must be a multiple of 4 and at least cols %lld", x.stride,
                 (long long)w0.cols());
  if (y.stride < rows) return error("moe_gemm y stride %u is less than rows %u", y.stride, rows);
  const uint32_t tiles = max_tiles(n_slots, n_expert);
  if (tiles > 65535) return error("moe_gemm: %u slot tiles, at most 65535", tiles);
  const WeightChunk& c0 = w0.chunks()[0];
  const WeightChunk& c1 = w1 ? w1->chunks()[0] : c0;
  const GemmPush push{rows, uint32_t(w0.cols()), k, x.stride, y.stride, {0, 0, 0},
                      {c0.q_word, c0.h_word, c0.m_word, 0}, {c1.q_word, c1.h_word, c1.m_word, 0}};
  const BufferRange buffers[6] = {whole(*c0.buffer), whole(*c1.buffer), x.range, y.range, scratch.order,
                                  scratch.tiles};
  const uint32_t tile = tile_for(n_slots, n_expert), tile_rows = (coopmat_ ? kCoopmatThreads * 16 : 4096) / tile;
  cmd.dispatch(*gemm_[tile == 64], buffers, &push, sizeof push, (rows + tile_rows - 1) / tile_rows, tiles);
  return Status();
}

Status MoeGemm::record_swiglu(Commands& cmd, const WeightBuffer& gate, const WeightBuffer& up, uint32_t n_expert,
                              const Activations& x, const MoeScratch& scratch, const Activations& y,
                              uint32_t n_tokens, uint32_t k) const {
  if (!swiglu_) return error("this moe_gemm was not made for gate/up pairs");
  if (n_tokens * k == 0) return Status();
  return record_gemm(cmd, gate, &up, n_expert, x, scratch, y, n_tokens * k, k);
}

Status MoeGemm::record_down(Commands& cmd, const WeightBuffer& w, uint32_t n_expert, const Activations& x,
                            const BufferRange& weights, const MoeScratch& scratch, const Activations& y,
                            uint32_t n_tokens, uint32_t k, bool accumulate) const {
  if (swiglu_) return error("this moe_gemm was made for gate/up pairs: use record_swiglu");
  if (n_tokens * k == 0) return Status();
  ZINC_RETURN_IF_ERROR(record_gemm(cmd, w, nullptr, n_expert, x, scratch, scratch.expert_out, n_tokens * k, k));
  cmd.compute_barrier();
  const uint32_t rows = uint32_t(w.rows() / n_expert);
  if (y.stride < rows) return error("moe_gemm y stride %u is less than rows %u", y.stride, rows);
  const CombinePush push{rows, n_tokens, k, scratch.expert_out.stride, y.stride, accumulate ? 1u : 0u};
  const BufferRange buffers[3] = {scratch.expert_out.range, weights, y.range};
  const Grid grid = grid_for((rows * n_tokens + 255) / 256);
  cmd.dispatch(*combine_, buffers, &push, sizeof push, grid.x, grid.y);
  return Status();
}

}  // namespace zinc::vulkan::ops
