// The Qwen3.5 hybrid family: qwen35 (dense) and qwen35moe (routed + shared expert), model-spec
// 3.6-3.8. Three Gated DeltaNet layers, then one gated full-attention layer (by
// full_attention_interval); trailing MTP blocks are not run.
#include "model/blocks.h"
#include "model/family.h"
#include "model/weight_sets.h"

namespace zinc::model {
namespace {

using namespace sets;

graph::Graph build(const Model& m, graph::BatchShape shape) {
  GraphBuilder g(shape, m.state_layout());
  BufferId x = embed_tokens(g, m);
  BufferId residual;
  for (int il = 0; il < int(m.hparams().n_layer); ++il) {
    BufferId h = residual_norm(g, m, x, residual, WeightId::kAttnNorm, il);
    BufferId mixed = m.hparams().layer_kind[size_t(il)] == LayerKind::kAttention
                         ? attention_block(g, m, il, h, {.output_gate = true})
                         : delta_net_block(g, m, il, h);
    h = residual_norm(g, m, x, mixed, WeightId::kPostAttnNorm, il);
    residual = ffn_block(g, m, il, h);
  }
  return g.finish(output_logits(g, m, x, residual));
}

Status load_hybrid(const KeyReader& keys, HParams& hp) {
  ZINC_ASSIGN_OR_RETURN(auto sections, keys.int_array("rope.dimension_sections", 4));
  std::copy(sections.begin(), sections.end(), hp.rope.sections.begin());

  DeltaNetParams dn;
  ZINC_ASSIGN_OR_RETURN(dn.conv_kernel, keys.u32("ssm.conv_kernel"));
  ZINC_ASSIGN_OR_RETURN(uint32_t inner, keys.u32("ssm.inner_size"));
  ZINC_ASSIGN_OR_RETURN(dn.d_k, keys.u32("ssm.state_size"));
  ZINC_ASSIGN_OR_RETURN(dn.n_v_heads, keys.u32("ssm.time_step_rank"));
  ZINC_ASSIGN_OR_RETURN(dn.n_k_heads, keys.u32("ssm.group_count"));
  ZINC_ASSIGN_OR_RETURN(dn.full_attention_interval, keys.u32_or("full_attention_interval", 4));
  if (dn.conv_kernel == 0 || dn.d_k == 0 || dn.n_k_heads == 0 || dn.n_v_heads % dn.n_k_heads != 0 ||
      inner % dn.n_v_heads != 0 || dn.full_attention_interval == 0)
    return error("inconsistent delta-net sizes: conv_kernel %u, state_size %u, group_count %u, time_step_rank %u, "
                 "inner_size %u, full_attention_interval %u",
                 dn.conv_kernel, dn.d_k, dn.n_k_heads, dn.n_v_heads, inner, dn.full_attention_interval);
  dn.d_v = inner / dn.n_v_heads;
  hp.delta_net = dn;

  ZINC_ASSIGN_OR_RETURN(uint32_t nextn, keys.u32_or("nextn_predict_layers", 0));
  if (nextn >= hp.n_layer_file)
    return error("%s = %u leaves no layers of %u", keys.key("nextn_predict_layers").c_str(), nextn, hp.n_layer_file);
  hp.n_layer = hp.n_layer_file - nextn;
  hp.layer_kind.assign(hp.n_layer, LayerKind::kDeltaNet);
  for (uint32_t i = 0; i < hp.n_layer; ++i)
    if ((i + 1) % dn.full_attention_interval == 0) hp.layer_kind[i] = LayerKind::kAttention;
  return ok_status();
}

Status load_hybrid_moe(const KeyReader& keys, HParams& hp) {
  ZINC_RETURN_IF_ERROR(load_hybrid(keys, hp));
  MoeParams moe;
  ZINC_ASSIGN_OR_RETURN(moe.n_expert, keys.u32("expert_count"));
  ZINC_ASSIGN_OR_RETURN(moe.n_expert_used, keys.u32("expert_used_count"));
  if (moe.n_expert == 0 || moe.n_expert_used == 0 || moe.n_expert_used > moe.n_expert)
    return error("expert_used_count %u must be in 1..expert_count %u", moe.n_expert_used, moe.n_expert);
  ZINC_ASSIGN_OR_RETURN(moe.n_ff_exp, keys.u32_or("expert_feed_forward_length", hp.n_ff[0]));
  ZINC_ASSIGN_OR_RETURN(moe.n_ff_shexp, keys.u32_or("expert_shared_feed_forward_length", hp.n_ff[0]));
  if (moe.n_ff_exp == 0 || moe.n_ff_shexp == 0)
    return error("missing metadata key '%s'", keys.key("expert_feed_forward_length").c_str());
  hp.moe = moe;
  hp.ffn = FfnKind::kMoeShared;
  return ok_status();
}

constexpr auto kQwen35Weights = concat(kEmbedOutput, kAttnNorm, kGatedAttention, kDeltaNetWeights, kPostAttnNorm, kDenseFfnWeights);
constexpr auto kQwen35MoeWeights =
    concat(kEmbedOutput, kAttnNorm, kGatedAttention, kDeltaNetWeights, kPostAttnNorm, kMoe, kSharedExpertWeights);

}  // namespace

const Family kQwen35Family{"qwen35", graph::RopeMode::kImrope, load_hybrid, kQwen35Weights, build};
const Family kQwen35MoeFamily{"qwen35moe", graph::RopeMode::kImrope, load_hybrid_moe, kQwen35MoeWeights, build};

}  // namespace zinc::model
