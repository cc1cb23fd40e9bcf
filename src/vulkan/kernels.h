// The op kernels (pipelines) a device's executors share: fixed ones made at creation, typed ones
// (matvec, gemm, get_rows per weight type) on first use. Borrows the Device.
#pragma once

#include <map>
#include <memory>
#include <tuple>

#include "vulkan/ops/argmax.h"
#include "vulkan/ops/attention.h"
#include "vulkan/ops/attention_o.h"
#include "vulkan/ops/elementwise.h"
#include "vulkan/ops/gated_delta_net.h"
#include "vulkan/ops/gated_rms_norm.h"
#include "vulkan/ops/gemm.h"
#include "vulkan/ops/get_rows.h"
#include "vulkan/ops/matvec.h"
#include "vulkan/ops/moe_gemm.h"
#include "vulkan/ops/moe_matvec.h"
#include "vulkan/ops/moe_route.h"
#include "vulkan/ops/qk_norm.h"
#include "vulkan/ops/rms_norm.h"
#include "vulkan/ops/rope.h"
#include "vulkan/ops/rows.h"
#include "vulkan/ops/shared_expert_gate.h"
#include "vulkan/ops/ssm_conv1d.h"

namespace zinc::vulkan {

class Kernels {
 public:
  // kv_f16: the KV pool's element type.
  // matvec_steps: the staged matvecs' groups loaded ahead (MatvecOptions::steps; 0: theirs).
  static Result<std::unique_ptr<Kernels>> create(const Device& device, bool kv_f16, uint32_t matvec_steps = 0);
  const Device& device() const { return device_; }

  Result<const ops::Matvec*> matvec(TensorType type, bool swiglu);
  // For products of few rows (a folded router's, a few hundred): 4 rows a workgroup, a row
  // step's groups split over 4 subgroups on the staged kernel, so that more workgroups share
  // them; with topk (Q8_0 only), the variant that can also rank the rows (MatvecOptions::topk).
  Result<const ops::Matvec*> narrow_matvec(TensorType type, bool topk);
  // The matvec whose staged kernel can also write the next norm's inputs (ops::NormOut): a
  // folded router's projection.
  Result<const ops::Matvec*> norm_out_matvec(TensorType type);
  // Decode attention fused with the output projection (W_o of `type`, `group` query heads a KV head).
  Result<const ops::AttentionO*> attention_o(TensorType type, uint32_t group, uint32_t head_dim, bool router = false,
                                             uint32_t rank_parts = 1);
  Result<const ops::Gemm*> gemm(TensorType type);
  Result<const ops::GetRows*> get_rows(TensorType type);
  Result<const ops::MoeMatvec*> moe_matvec(TensorType type, bool swiglu);
  Result<const ops::MoeGemm*> moe_gemm(TensorType type, bool swiglu);
  // MoE and hybrid ops, made on first use (dense models never build them).
  Result<const ops::MoeRoute*> moe_route();
  Result<const ops::SharedExpertGate*> shared_expert_gate();
  Result<const ops::SsmConv1d*> ssm_conv1d();
  Result<const ops::GatedDeltaNet*> gated_delta_net();
  Result<const ops::GatedRmsNorm*> gated_rms_norm();

  std::unique_ptr<ops::RmsNorm> rms_norm;
  std::unique_ptr<ops::QkNorm> qk_norm;
  std::unique_ptr<ops::Rope> rope;
  std::unique_ptr<ops::KvWrite> kv_write;
  std::unique_ptr<ops::Attention> attention;
  std::unique_ptr<ops::Elementwise> add, swiglu;
  std::unique_ptr<ops::AddBias> add_bias;
  std::unique_ptr<ops::GatherRows> gather_rows;
  std::unique_ptr<ops::Argmax> argmax;

 private:
  explicit Kernels(const Device& d) : device_(d) {}
  const Device& device_;
  uint32_t matvec_steps_ = 0;
  std::map<std::pair<TensorType, bool>, std::unique_ptr<ops::Matvec>> matvec_;
  std::map<std::pair<TensorType, bool>, std::unique_ptr<ops::Matvec>> narrow_matvec_;
  std::map<TensorType, std::unique_ptr<ops::Matvec>> norm_out_matvec_;
  std::map<std::tuple<TensorType, uint32_t, uint32_t, bool, uint32_t>, std::unique_ptr<ops::AttentionO>> attention_o_;
  std::map<TensorType, std::unique_ptr<ops::Gemm>> gemm_;
  std::map<TensorType, std::unique_ptr<ops::GetRows>> get_rows_;
  std::map<std::pair<TensorType, bool>, std::unique_ptr<ops::MoeMatvec>> moe_matvec_;
  std::map<std::pair<TensorType, bool>, std::unique_ptr<ops::MoeGemm>> moe_gemm_;
  std::unique_ptr<ops::MoeRoute> moe_route_;
  std::unique_ptr<ops::SharedExpertGate> shared_expert_gate_;
  std::unique_ptr<ops::SsmConv1d> ssm_conv1d_;
  std::unique_ptr<ops::GatedDeltaNet> gated_delta_net_;
  std::unique_ptr<ops::GatedRmsNorm> gated_rms_norm_;
};

}  // namespace zinc::vulkan
