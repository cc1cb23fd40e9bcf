#include "vulkan/kernels.h"

namespace zinc::vulkan {

Result<std::unique_ptr<Kernels>> Kernels::create(const Device& device, bool kv_f16, uint32_t matvec_steps) {
  std::unique_ptr<Kernels> k(new Kernels(device));
  k->matvec_steps_ = matvec_steps;
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

namespace {

// The Matvec in `slot`, made with `o` on first use.
Result<const ops::Matvec*> cached(std::unique_ptr<ops::Matvec>& slot, const Device& device, TensorType type,
                                  const ops::MatvecOptions& o) {
  if (!slot) {
    ZINC_ASSIGN_OR_RETURN(slot, ops::Matvec::create(device, type, o));
  }
  return slot.get();
}

}  // namespace

Result<const ops::Matvec*> Kernels::matvec(TensorType type, bool swiglu) {
  ops::MatvecOptions o;
  o.swiglu = swiglu;
  // A CPU driver (lavapipe) runs a workgroup's invocations as loops over its SIMD lanes, so idle
  // ones cost nearly what busy ones do: the float kernel (types without int8 products, never
  // staged) takes workgroups of 32 threads and 8 rows there. A 256-wide F32 model's decode step
  // on lavapipe: 219.8 -> 40 ms; GPUs keep 128 threads and 2-4 rows.
  if (device_.caps().type == "cpu" && !ops::int8_capable(type)) {
    o.group_size = 32;
    o.rows = 8;
  }
  o.steps = matvec_steps_;
  return cached(matvec_[{type, swiglu}], device_, type, o);
}

Result<const ops::Matvec*> Kernels::narrow_matvec(TensorType type, bool topk) {
  ops::MatvecOptions o;
  o.rows = 4;
  o.k_slices = 4;
  o.topk = topk;
  o.steps = matvec_steps_;
  return cached(narrow_matvec_[{type, topk}], device_, type, o);
}

Result<const ops::Matvec*> Kernels::norm_out_matvec(TensorType type) {
  ops::MatvecOptions o;
  o.norm_out = true;
  o.steps = matvec_steps_;
  return cached(norm_out_matvec_[type], device_, type, o);
}

Result<const ops::AttentionO*> Kernels::attention_o(TensorType type, uint32_t group, uint32_t head_dim, bool router,
                                                    uint32_t rank_parts) {
  auto& slot = attention_o_[{type, group, head_dim, router, rank_parts}];
  if (!slot) {
    ZINC_ASSIGN_OR_RETURN(slot, ops::AttentionO::create(device_, type, group, head_dim, router, rank_parts));
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

Result<const ops::MoeMatvec*> Kernels::moe_matvec(TensorType type, bool swiglu) {
  auto& slot = moe_matvec_[{type, swiglu}];
  if (!slot) {
    ops::MoeMatvecOptions o;
    o.swiglu = swiglu;
    ZINC_ASSIGN_OR_RETURN(slot, ops::MoeMatvec::create(device_, type, o));
  }
  return slot.get();
}

Result<const ops::MoeGemm*> Kernels::moe_gemm(TensorType type, bool swiglu) {
  auto& slot = moe_gemm_[{type, swiglu}];
  if (!slot) {
    ZINC_ASSIGN_OR_RETURN(slot, ops::MoeGemm::create(device_, type, swiglu));
  }
  return slot.get();
}

Result<const ops::MoeRoute*> Kernels::moe_route() {
  if (!moe_route_) {
    ZINC_ASSIGN_OR_RETURN(moe_route_, ops::MoeRoute::create(device_));
  }
  return moe_route_.get();
}

Result<const ops::SharedExpertGate*> Kernels::shared_expert_gate() {
  if (!shared_expert_gate_) {
    ZINC_ASSIGN_OR_RETURN(shared_expert_gate_, ops::SharedExpertGate::create(device_));
  }
  return shared_expert_gate_.get();
}

Result<const ops::SsmConv1d*> Kernels::ssm_conv1d() {
  if (!ssm_conv1d_) {
    ZINC_ASSIGN_OR_RETURN(ssm_conv1d_, ops::SsmConv1d::create(device_));
  }
  return ssm_conv1d_.get();
}

Result<const ops::GatedDeltaNet*> Kernels::gated_delta_net() {
  if (!gated_delta_net_) {
    ZINC_ASSIGN_OR_RETURN(gated_delta_net_, ops::GatedDeltaNet::create(device_));
  }
  return gated_delta_net_.get();
}

Result<const ops::GatedRmsNorm*> Kernels::gated_rms_norm() {
  if (!gated_rms_norm_) {
    ZINC_ASSIGN_OR_RETURN(gated_rms_norm_, ops::GatedRmsNorm::create(device_));
  }
  return gated_rms_norm_.get();
}

}  // namespace zinc::vulkan
