#include "vulkan/kernels.h"

namespace zinc::vulkan {

Result<std::unique_ptr<Kernels>> Kernels::create(const Device& device, bool kv_f16) {
  std::unique_ptr<Kernels> k(new Kernels(device));
  ZINC_ASSIGN_OR_RETURN(k->rms_norm, ops::RmsNorm::create(device));
  ZINC_ASSIGN_OR_RETURN(k->qk_norm, ops::QkNorm::create(device));
  ZINC_ASSIGN_OR_RETURN(k->rope, ops::Rope::create(device));
  ZINC_ASSIGN_OR_RETURN(k->kv_write, ops::KvWrite::create(device, kv_f16));
  ZINC_ASSIGN_OR_RETURN(k->attention, ops::Attention::create(device, kv_f16));
  ZINC_ASSIGN_OR_RETURN(k->add, ops::Elementwise::create(device, ops::ElementwiseOp::kAdd));
  ZINC_ASSIGN_OR_RETURN(k->swiglu, ops::Elementwise::create(device, ops::ElementwiseOp::kSwiglu));
  ZINC_ASSIGN_OR_RETURN(k->add_bias, ops::AddBias::create(device));
  ZINC_ASSIGN_OR_RETURN(k->gather_rows, ops::GatherRows::create(device));
  ZINC_ASSIGN_OR_RETURN(k->argmax, ops::Argmax::create(device));
  return k;
}

Result<const ops::Matvec*> Kernels::matvec(TensorType type, bool swiglu) {
  auto& slot = matvec_[{type, swiglu}];
  if (!slot) {
    ops::MatvecOptions o;
    o.swiglu = swiglu;
    ZINC_ASSIGN_OR_RETURN(slot, ops::Matvec::create(device_, type, o));
  }
  return slot.get();
}

Result<const ops::Gemm*> Kernels::gemm(TensorType type) {
  auto& slot = gemm_[type];
  if (!slot) {
    ZINC_ASSIGN_OR_RETURN(slot, ops::Gemm::create(device_, type));
  }
  return slot.get();
}

Result<const ops::GetRows*> Kernels::get_rows(TensorType type) {
  auto& slot = get_rows_[type];
  if (!slot) {
    ZINC_ASSIGN_OR_RETURN(slot, ops::GetRows::create(device_, type));
  }
  return slot.get();
}

}  // namespace zinc::vulkan
