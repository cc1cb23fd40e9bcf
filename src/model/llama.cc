// The Llama-style decoder family: llama (incl. Mixtral-style MoE), qwen2, qwen3, qwen3moe
// (model-spec 3.1-3.4). One layer loop; the variants (biases, QK-norm, MoE, RoPE pairing)
// are data from the file.
#include "model/blocks.h"
#include "model/family.h"
#include "model/weight_sets.h"

namespace zinc::model {
namespace {

using namespace sets;

graph::Graph build(const Model& m, graph::BatchShape shape) {
  GraphBuilder g(shape, m.state_layout());
  BufferId x = embed_tokens(g, m);
  BufferId residual;  // the FFN output, added to x by the next norm
  for (int il = 0; il < int(m.hparams().n_layer); ++il) {
    BufferId h = residual_norm(g, m, x, residual, WeightId::kAttnNorm, il);
    BufferId attn = attention_block(g, m, il, h, {});
    h = residual_norm(g, m, x, attn, WeightId::kFfnNorm, il);
    residual = ffn_block(g, m, il, h);
  }
  return g.finish(output_logits(g, m, x, residual));
}

Status read_moe(const KeyReader& keys, HParams& hp, bool required, uint32_t n_ff_exp_default) {
  ZINC_ASSIGN_OR_RETURN(uint32_t n_expert, required ? keys.u32("expert_count") : keys.u32_or("expert_count", 0));
  if (n_expert == 0) {
    if (required) return error("%s must be positive", keys.key("expert_count").c_str());
    return ok_status();
  }
  MoeParams moe;
  moe.n_expert = n_expert;
  ZINC_ASSIGN_OR_RETURN(moe.n_expert_used, keys.u32("expert_used_count"));
  if (moe.n_expert_used == 0 || moe.n_expert_used > n_expert)
    return error("%s = %u must be in 1..%u", keys.key("expert_used_count").c_str(), moe.n_expert_used, n_expert);
  ZINC_ASSIGN_OR_RETURN(moe.n_ff_exp, keys.u32_or("expert_feed_forward_length", n_ff_exp_default));
  if (moe.n_ff_exp == 0) return error("missing metadata key '%s'", keys.key("expert_feed_forward_length").c_str());
  hp.moe = moe;
  hp.ffn = FfnKind::kMoe;
  return ok_status();
}

Status load_llama(const KeyReader& keys, HParams& hp) { return read_moe(keys, hp, false, hp.n_ff[0]); }
Status load_dense(const KeyReader&, HParams&) { return ok_status(); }
Status load_qwen3moe(const KeyReader& keys, HParams& hp) {
  ZINC_ASSIGN_OR_RETURN(uint32_t used, keys.u32_or("expert_used_count", 1));
  return read_moe(keys, hp, true, used ? hp.n_ff[0] / used : 0);
}

constexpr auto kLlamaWeights = concat(kEmbedOutput, kRopeFreqs, kAttnNorm, kAttnProj, kAttnBiases, kFfnNorm, kDenseFfnWeights, kMoe);
constexpr auto kQwen2Weights = concat(kEmbedOutput, kOutputBias, kAttnNorm, kAttnProj, kAttnBiases, kFfnNorm, kDenseFfnWeights);
constexpr auto kQwen3Weights = concat(kEmbedOutput, kAttnNorm, kAttnProj, kAttnBiases, kQkNorm, kFfnNorm, kDenseFfnWeights);
constexpr auto kQwen3MoeWeights = concat(kEmbedOutput, kAttnNorm, kAttnProj, kAttnBiases, kQkNorm, kFfnNorm, kMoe);

}  // namespace

const Family kLlamaFamily{"llama", graph::RopeMode::kNorm, load_llama, kLlamaWeights, build};
const Family kQwen2Family{"qwen2", graph::RopeMode::kNeox, load_dense, kQwen2Weights, build};
const Family kQwen3Family{"qwen3", graph::RopeMode::kNeox, load_dense, kQwen3Weights, build};
const Family kQwen3MoeFamily{"qwen3moe", graph::RopeMode::kNeox, load_qwen3moe, kQwen3MoeWeights, build};

}  // namespace zinc::model
