#include "model/blocks.h"

#include <cmath>

#include "core/check.h"

namespace zinc::model {

using graph::HeadLayout;

std::string layer_name(int layer, const char* what) {
  return layer < 0 ? std::string(what) : "blk." + std::to_string(layer) + "." + what;
}

namespace {

BufferId matmul(GraphBuilder& g, const std::string& name, BufferId in, const graph::Weight& w,
                const graph::Weight* bias = nullptr, const graph::Weight* up = nullptr) {
  BufferId out = g.buffer(name, w.rows(), g.info(in).rows);
  g.add(name, graph::Matmul{in, out, &w, bias, up});
  return out;
}

graph::RopeParams rope_params(const Model& m) {
  const RopeConfig& r = m.hparams().rope;
  graph::RopeParams p;
  p.mode = r.mode;
  p.n_rot = r.n_rot;
  p.freq_base = r.freq_base;
  p.freq_scale = r.freq_scale;
  p.attn_factor = r.attn_factor;
  p.sections = r.sections;
  p.freq_factors = m.weight(WeightId::kRopeFreqs);
  if (r.yarn) {
    // YaRN ramp over pair index (model-spec 3.0.3).
    p.ext_factor = 1.f;
    auto corr_dim = [&](float beta) {
      return float(r.n_rot) * std::log(float(r.n_ctx_orig) / (beta * 2.f * float(M_PI))) / (2.f * std::log(r.freq_base));
    };
    p.corr_dims[0] = std::max(0.f, std::floor(corr_dim(r.beta_fast)));
    p.corr_dims[1] = std::min(float(r.n_rot - 1), std::ceil(corr_dim(r.beta_slow)));
  }
  return p;
}

}  // namespace

BufferId embed_tokens(GraphBuilder& g, const Model& m) {
  BufferId x = g.buffer("inp_embd", m.hparams().n_embd);
  g.add("token_embd", graph::Embed{x, &m.need(WeightId::kTokenEmbd), 1.f});
  return x;
}

BufferId residual_norm(GraphBuilder& g, const Model& m, BufferId x, BufferId residual, WeightId norm, int layer) {
  const graph::Weight& w = m.need(norm, layer);
  const std::string name = w.name.substr(0, w.name.rfind(".weight"));  // "blk.3.attn_norm"
  BufferId out = g.buffer(name, g.info(x).cols, g.info(x).rows);
  g.add(name, graph::RmsNorm{x, residual, out, &w, m.hparams().rms_eps});
  return out;
}

BufferId attention_block(GraphBuilder& g, const Model& m, int il, BufferId h, const AttentionOptions& opt) {
  const HParams& hp = m.hparams();
  const int32_t n_head = int32_t(hp.n_head[size_t(il)]), n_kv = int32_t(hp.n_head_kv[size_t(il)]);
  const int32_t dk = int32_t(hp.n_head_dim_k), dv = int32_t(hp.n_head_dim_v);
  const float eps = hp.rms_eps;

  BufferId q = matmul(g, layer_name(il, "attn_q"), h, m.need(WeightId::kAttnQ, il), m.weight(WeightId::kAttnQBias, il));
  BufferId k = matmul(g, layer_name(il, "attn_k"), h, m.need(WeightId::kAttnK, il), m.weight(WeightId::kAttnKBias, il));
  BufferId v = matmul(g, layer_name(il, "attn_v"), h, m.need(WeightId::kAttnV, il), m.weight(WeightId::kAttnVBias, il));

  // With an output gate each head's block of the Q row is [query(dk), gate(dk)].
  const HeadLayout q_heads = opt.output_gate ? HeadLayout{n_head, dk, 2 * dk, 0} : HeadLayout::packed(n_head, dk);
  const HeadLayout gate_heads = opt.output_gate ? HeadLayout{n_head, dk, 2 * dk, dk} : HeadLayout{};
  const HeadLayout k_heads = HeadLayout::packed(n_kv, dk), v_heads = HeadLayout::packed(n_kv, dv);

  if (const graph::Weight* qn = m.weight(WeightId::kAttnQNorm, il))
    g.add(qn->name, graph::QkNorm{q, q_heads, qn, eps});
  if (const graph::Weight* kn = m.weight(WeightId::kAttnKNorm, il))
    g.add(kn->name, graph::QkNorm{k, k_heads, kn, eps});

  const graph::RopeParams rope = rope_params(m);
  g.add(layer_name(il, "rope_q"), graph::Rope{q, q_heads, rope});
  g.add(layer_name(il, "rope_k"), graph::Rope{k, k_heads, rope});

  const int32_t kv_layer = m.kv_layer(il);
  ZINC_CHECK(kv_layer >= 0);
  g.add(layer_name(il, "kv_write"), graph::KvWrite{k, v, k_heads, v_heads, kv_layer});

  BufferId o = g.buffer(layer_name(il, "attn"), int64_t(n_head) * dv);
  graph::Attention att;
  att.q = q;
  att.q_heads = q_heads;
  if (opt.output_gate) {
    att.gate = q;
    att.gate_heads = gate_heads;
  }
  att.out = o;
  att.kv_layer = kv_layer;
  att.scale = 1.f / std::sqrt(float(dk));
  g.add(layer_name(il, "attention"), att);

  return matmul(g, layer_name(il, "attn_output"), o, m.need(WeightId::kAttnOut, il), m.weight(WeightId::kAttnOutBias, il));
}

BufferId swiglu_ffn(GraphBuilder& g, const Model& m, int il, BufferId h) {
  BufferId act = matmul(g, layer_name(il, "ffn_gate_up"), h, m.need(WeightId::kFfnGate, il), nullptr,
                        &m.need(WeightId::kFfnUp, il));
  return matmul(g, layer_name(il, "ffn_down"), act, m.need(WeightId::kFfnDown, il));
}

BufferId moe_ffn(GraphBuilder& g, const Model& m, int il, BufferId h) {
  const MoeParams& moe = *m.hparams().moe;
  const int32_t k = int32_t(moe.n_expert_used);
  const int64_t T = g.n_tokens();
  BufferId logits = matmul(g, layer_name(il, "ffn_gate_inp"), h, m.need(WeightId::kFfnGateInp, il));
  BufferId ids = g.buffer(layer_name(il, "moe_ids"), k, T, graph::DType::kI32);
  BufferId weights = g.buffer(layer_name(il, "moe_weights"), k, T);
  g.add(layer_name(il, "moe_route"), graph::MoeRoute{logits, ids, weights, k, true, graph::MoeGating::kSoftmax});

  BufferId act = g.buffer(layer_name(il, "moe_act"), moe.n_ff_exp, T * k);
  g.add(layer_name(il, "ffn_gate_up_exps"),
        graph::MoeMatmul{h, ids, {}, act, &m.need(WeightId::kFfnGateExps, il), &m.need(WeightId::kFfnUpExps, il)});
  BufferId out = g.buffer(layer_name(il, "moe_out"), m.hparams().n_embd, T);
  g.add(layer_name(il, "ffn_down_exps"),
        graph::MoeMatmul{act, ids, weights, out, &m.need(WeightId::kFfnDownExps, il), nullptr});

  if (m.hparams().ffn == FfnKind::kMoeShared) {
    BufferId sact = matmul(g, layer_name(il, "ffn_gate_up_shexp"), h, m.need(WeightId::kFfnGateShexp, il), nullptr,
                           &m.need(WeightId::kFfnUpShexp, il));
    BufferId shared = matmul(g, layer_name(il, "ffn_down_shexp"), sact, m.need(WeightId::kFfnDownShexp, il));
    g.add(layer_name(il, "shared_expert_gate"),
          graph::SharedExpertGate{h, shared, out, &m.need(WeightId::kFfnGateInpShexp, il)});
  }
  return out;
}

BufferId ffn_block(GraphBuilder& g, const Model& m, int il, BufferId h) {
  return m.hparams().ffn == FfnKind::kDense ? swiglu_ffn(g, m, il, h) : moe_ffn(g, m, il, h);
}

BufferId delta_net_block(GraphBuilder& g, const Model& m, int il, BufferId h) {
  const DeltaNetParams& dn = *m.hparams().delta_net;
  BufferId qkv = matmul(g, layer_name(il, "ssm_qkv"), h, m.need(WeightId::kSsmQkv, il));
  BufferId z = matmul(g, layer_name(il, "ssm_z"), h, m.need(WeightId::kSsmGate, il));
  BufferId beta = matmul(g, layer_name(il, "ssm_beta"), h, m.need(WeightId::kSsmBeta, il));
  BufferId alpha = matmul(g, layer_name(il, "ssm_alpha"), h, m.need(WeightId::kSsmAlpha, il));

  const int32_t rec = m.recurrent_layer(il);
  ZINC_CHECK(rec >= 0);
  BufferId conv = g.buffer(layer_name(il, "ssm_conv"), dn.conv_dim());
  g.add(layer_name(il, "ssm_conv1d"), graph::SsmConv1d{qkv, conv, &m.need(WeightId::kSsmConv1d, il), rec});

  graph::GatedDeltaNet op;
  op.qkv = conv;
  op.beta = beta;
  op.alpha = alpha;
  op.out = g.buffer(layer_name(il, "ssm_core"), dn.value_dim());
  op.a = &m.need(WeightId::kSsmA, il);
  op.dt_bias = &m.need(WeightId::kSsmDt, il);
  op.n_k_heads = int32_t(dn.n_k_heads);
  op.d_k = int32_t(dn.d_k);
  op.n_v_heads = int32_t(dn.n_v_heads);
  op.d_v = int32_t(dn.d_v);
  op.key_map = graph::KeyHeadMap::kTiled;  // Qwen3.5 GGUFs store value heads tiled (model-spec 3.6)
  op.eps = m.hparams().rms_eps;
  op.recurrent_layer = rec;
  g.add(layer_name(il, "gated_delta_net"), op);

  BufferId normed = g.buffer(layer_name(il, "ssm_normed"), dn.value_dim());
  g.add(layer_name(il, "ssm_norm"),
        graph::GatedRmsNorm{op.out, z, normed, &m.need(WeightId::kSsmNorm, il), int32_t(dn.d_v), m.hparams().rms_eps});
  return matmul(g, layer_name(il, "ssm_out"), normed, m.need(WeightId::kSsmOut, il));
}

BufferId output_logits(GraphBuilder& g, const Model& m, BufferId x, BufferId residual) {
  const HParams& hp = m.hparams();
  if (g.n_outputs() < g.n_tokens()) {
    if (residual.valid()) g.add("residual_final", graph::Add{x, residual, x});
    BufferId sel = g.buffer("out_rows", hp.n_embd, g.n_outputs());
    g.add("output_rows", graph::GatherRows{x, sel});
    x = sel;
    residual = {};
  }
  BufferId h = g.buffer("result_norm", hp.n_embd, g.info(x).rows);
  g.add("output_norm", graph::RmsNorm{x, residual, h, &m.need(WeightId::kOutputNorm), hp.rms_eps});
  if (g.hidden_output()) return h;
  return matmul(g, "result_output", h, m.need(WeightId::kOutput), m.weight(WeightId::kOutputBias));
}

}  // namespace zinc::model
