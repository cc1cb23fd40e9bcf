#include "model/weights.h"

#include <cstdio>

#include "core/check.h"

namespace zinc::model {

int64_t dim_value(Dim d, const HParams& hp, int layer) {
  const size_t l = layer < 0 ? 0 : size_t(layer);
  const int64_t n_head = hp.n_head[l], n_head_kv = hp.n_head_kv[l];
  const MoeParams moe = hp.moe.value_or(MoeParams{});
  const DeltaNetParams dn = hp.delta_net.value_or(DeltaNetParams{});
  switch (d) {
    case Dim::kNone: return 1;
    case Dim::kEmbd: return hp.n_embd;
    case Dim::kVocab: return hp.n_vocab;
    case Dim::kQ: return n_head * hp.n_head_dim_k;
    case Dim::kQGate: return 2 * n_head * hp.n_head_dim_k;
    case Dim::kKv: return n_head_kv * hp.n_head_dim_k;
    case Dim::kVKv: return n_head_kv * hp.n_head_dim_v;
    case Dim::kAttnOut: return n_head * hp.n_head_dim_v;
    case Dim::kHeadK: return hp.n_head_dim_k;
    case Dim::kRotHalf: return hp.rope.n_rot / 2;
    case Dim::kFf: return hp.n_ff[l];
    case Dim::kExpert: return moe.n_expert;
    case Dim::kFfExp: return moe.n_ff_exp;
    case Dim::kFfShexp: return moe.n_ff_shexp;
    case Dim::kConvK: return dn.conv_kernel;
    case Dim::kConvDim: return dn.conv_dim();
    case Dim::kSsmValue: return dn.value_dim();
    case Dim::kSsmVHeads: return dn.n_v_heads;
    case Dim::kSsmDv: return dn.d_v;
  }
  ZINC_CHECK(false);
  return 0;
}

const char* dim_name(Dim d) {
  switch (d) {
    case Dim::kNone: return "1";
    case Dim::kEmbd: return "n_embd";
    case Dim::kVocab: return "n_vocab";
    case Dim::kQ: return "n_head*head_dim_k";
    case Dim::kQGate: return "2*n_head*head_dim_k";
    case Dim::kKv: return "n_head_kv*head_dim_k";
    case Dim::kVKv: return "n_head_kv*head_dim_v";
    case Dim::kAttnOut: return "n_head*head_dim_v";
    case Dim::kHeadK: return "head_dim_k";
    case Dim::kRotHalf: return "n_rot/2";
    case Dim::kFf: return "n_ff";
    case Dim::kExpert: return "n_expert";
    case Dim::kFfExp: return "n_ff_exp";
    case Dim::kFfShexp: return "n_ff_shexp";
    case Dim::kConvK: return "ssm.conv_kernel";
    case Dim::kConvDim: return "ssm conv_dim";
    case Dim::kSsmValue: return "ssm.inner_size";
    case Dim::kSsmVHeads: return "ssm.time_step_rank";
    case Dim::kSsmDv: return "ssm head_dim_v";
  }
  return "?";
}

bool scope_applies(Scope s, const HParams& hp, int layer) {
  if (s == Scope::kGlobal) return layer < 0;
  if (layer < 0) return false;
  const size_t l = size_t(layer);
  switch (s) {
    case Scope::kGlobal: return false;
    case Scope::kEveryLayer: return true;
    case Scope::kAttention: return hp.layer_kind[l] == LayerKind::kAttention;
    case Scope::kDeltaNet: return hp.layer_kind[l] == LayerKind::kDeltaNet;
    case Scope::kDenseFfn: return hp.ffn == FfnKind::kDense;
    case Scope::kMoeFfn: return hp.ffn != FfnKind::kDense;
    case Scope::kSharedExpert: return hp.ffn == FfnKind::kMoeShared;
  }
  return false;
}

std::string weight_name(const WeightSpec& spec, int layer) {
  if (layer < 0) return spec.name;
  char buf[128];
  std::snprintf(buf, sizeof buf, spec.name, layer);
  return buf;
}

}  // namespace zinc::model
