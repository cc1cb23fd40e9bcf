// Reusable rows of family weight tables (model-spec section 3), joined with concat().
#pragma once

#include <array>

#include "model/weights.h"

namespace zinc::model::sets {

using enum Dim;
using enum Scope;
using enum Need;
using W = WeightId;
constexpr Dim _ = Dim::kNone;

template <size_t... N>
constexpr std::array<WeightSpec, (N + ...)> concat(const std::array<WeightSpec, N>&... parts) {
  std::array<WeightSpec, (N + ...)> out{};
  size_t i = 0;
  ((std::copy(parts.begin(), parts.end(), out.begin() + i), i += N), ...);
  return out;
}

constexpr std::array<WeightSpec, 3> kEmbedOutput{{
    {W::kTokenEmbd, "token_embd.weight", {kEmbd, kVocab, _}, kGlobal, kRequired},
    {W::kOutputNorm, "output_norm.weight", {kEmbd, _, _}, kGlobal, kRequired, true},
    {W::kOutput, "output.weight", {kEmbd, kVocab, _}, kGlobal, kOptional},  // absent: tied
}};
constexpr std::array<WeightSpec, 1> kOutputBias{{
    {W::kOutputBias, "output.bias", {kVocab, _, _}, kGlobal, kOptional, true},
}};
constexpr std::array<WeightSpec, 1> kRopeFreqs{{
    {W::kRopeFreqs, "rope_freqs.weight", {kRotHalf, _, _}, kGlobal, kOptional, true},
}};
constexpr std::array<WeightSpec, 1> kAttnNorm{{
    {W::kAttnNorm, "blk.%d.attn_norm.weight", {kEmbd, _, _}, kEveryLayer, kRequired, true},
}};
constexpr std::array<WeightSpec, 5> kAttnProj{{
    {W::kAttnQ, "blk.%d.attn_q.weight", {kEmbd, kQ, _}, kAttention, kRequired},
    {W::kAttnK, "blk.%d.attn_k.weight", {kEmbd, kKv, _}, kAttention, kRequired},
    {W::kAttnV, "blk.%d.attn_v.weight", {kEmbd, kVKv, _}, kAttention, kRequired},
    {W::kAttnOut, "blk.%d.attn_output.weight", {kAttnOut, kEmbd, _}, kAttention, kRequired},
    {W::kCount, "blk.%d.attn_qkv.weight", {_, _, _}, kAttention, kUnsupported},  // fused QKV
}};
constexpr std::array<WeightSpec, 4> kAttnBiases{{
    {W::kAttnQBias, "blk.%d.attn_q.bias", {kQ, _, _}, kAttention, kOptional, true},
    {W::kAttnKBias, "blk.%d.attn_k.bias", {kKv, _, _}, kAttention, kOptional, true},
    {W::kAttnVBias, "blk.%d.attn_v.bias", {kVKv, _, _}, kAttention, kOptional, true},
    {W::kAttnOutBias, "blk.%d.attn_output.bias", {kEmbd, _, _}, kAttention, kOptional, true},
}};
constexpr std::array<WeightSpec, 2> kQkNorm{{
    {W::kAttnQNorm, "blk.%d.attn_q_norm.weight", {kHeadK, _, _}, kAttention, kRequired, true},
    {W::kAttnKNorm, "blk.%d.attn_k_norm.weight", {kHeadK, _, _}, kAttention, kRequired, true},
}};
// Qwen3-Next / Qwen3.5 full attention: Q projection carries the output gate.
constexpr std::array<WeightSpec, 6> kGatedAttention{{
    {W::kAttnQ, "blk.%d.attn_q.weight", {kEmbd, kQGate, _}, kAttention, kRequired},
    {W::kAttnK, "blk.%d.attn_k.weight", {kEmbd, kKv, _}, kAttention, kRequired},
    {W::kAttnV, "blk.%d.attn_v.weight", {kEmbd, kVKv, _}, kAttention, kRequired},
    {W::kAttnOut, "blk.%d.attn_output.weight", {kAttnOut, kEmbd, _}, kAttention, kRequired},
    {W::kAttnQNorm, "blk.%d.attn_q_norm.weight", {kHeadK, _, _}, kAttention, kRequired, true},
    {W::kAttnKNorm, "blk.%d.attn_k_norm.weight", {kHeadK, _, _}, kAttention, kRequired, true},
}};
constexpr std::array<WeightSpec, 1> kFfnNorm{{
    {W::kFfnNorm, "blk.%d.ffn_norm.weight", {kEmbd, _, _}, kEveryLayer, kRequired, true},
}};
constexpr std::array<WeightSpec, 1> kPostAttnNorm{{
    {W::kPostAttnNorm, "blk.%d.post_attention_norm.weight", {kEmbd, _, _}, kEveryLayer, kRequired, true},
}};
constexpr std::array<WeightSpec, 6> kDenseFfnWeights{{
    {W::kFfnGate, "blk.%d.ffn_gate.weight", {kEmbd, kFf, _}, kDenseFfn, kRequired},
    {W::kFfnUp, "blk.%d.ffn_up.weight", {kEmbd, kFf, _}, kDenseFfn, kRequired},
    {W::kFfnDown, "blk.%d.ffn_down.weight", {kFf, kEmbd, _}, kDenseFfn, kRequired},
    {W::kCount, "blk.%d.ffn_gate.bias", {_, _, _}, kDenseFfn, kUnsupported},
    {W::kCount, "blk.%d.ffn_up.bias", {_, _, _}, kDenseFfn, kUnsupported},
    {W::kCount, "blk.%d.ffn_down.bias", {_, _, _}, kDenseFfn, kUnsupported},
}};
constexpr std::array<WeightSpec, 5> kMoe{{
    {W::kFfnGateInp, "blk.%d.ffn_gate_inp.weight", {kEmbd, kExpert, _}, kMoeFfn, kRequired},
    {W::kFfnGateExps, "blk.%d.ffn_gate_exps.weight", {kEmbd, kFfExp, kExpert}, kMoeFfn, kRequired},
    {W::kFfnUpExps, "blk.%d.ffn_up_exps.weight", {kEmbd, kFfExp, kExpert}, kMoeFfn, kRequired},
    {W::kFfnDownExps, "blk.%d.ffn_down_exps.weight", {kFfExp, kEmbd, kExpert}, kMoeFfn, kRequired},
    {W::kCount, "blk.%d.ffn_gate_up_exps.weight", {_, _, _}, kMoeFfn, kUnsupported},
}};
constexpr std::array<WeightSpec, 4> kSharedExpertWeights{{
    {W::kFfnGateInpShexp, "blk.%d.ffn_gate_inp_shexp.weight", {kEmbd, _, _}, kSharedExpert, kRequired, true},
    {W::kFfnGateShexp, "blk.%d.ffn_gate_shexp.weight", {kEmbd, kFfShexp, _}, kSharedExpert, kRequired},
    {W::kFfnUpShexp, "blk.%d.ffn_up_shexp.weight", {kEmbd, kFfShexp, _}, kSharedExpert, kRequired},
    {W::kFfnDownShexp, "blk.%d.ffn_down_shexp.weight", {kFfShexp, kEmbd, _}, kSharedExpert, kRequired},
}};
constexpr std::array<WeightSpec, 11> kDeltaNetWeights{{
    {W::kSsmQkv, "blk.%d.attn_qkv.weight", {kEmbd, kConvDim, _}, kDeltaNet, kRequired},
    {W::kSsmGate, "blk.%d.attn_gate.weight", {kEmbd, kSsmValue, _}, kDeltaNet, kRequired},
    {W::kSsmConv1d, "blk.%d.ssm_conv1d.weight", {kConvK, kConvDim, _}, kDeltaNet, kRequired, true},
    {W::kSsmDt, "blk.%d.ssm_dt.bias", {kSsmVHeads, _, _}, kDeltaNet, kRequired, true},
    {W::kSsmA, "blk.%d.ssm_a", {kSsmVHeads, _, _}, kDeltaNet, kRequired, true},
    {W::kSsmBeta, "blk.%d.ssm_beta.weight", {kEmbd, kSsmVHeads, _}, kDeltaNet, kRequired},
    {W::kSsmAlpha, "blk.%d.ssm_alpha.weight", {kEmbd, kSsmVHeads, _}, kDeltaNet, kRequired},
    {W::kSsmNorm, "blk.%d.ssm_norm.weight", {kSsmDv, _, _}, kDeltaNet, kRequired, true},
    {W::kSsmOut, "blk.%d.ssm_out.weight", {kSsmValue, kEmbd, _}, kDeltaNet, kRequired},
    {W::kCount, "blk.%d.ssm_in.weight", {_, _, _}, kDeltaNet, kUnsupported},  // legacy fused input
    {W::kCount, "blk.%d.ssm_ba.weight", {_, _, _}, kDeltaNet, kUnsupported},  // qwen3next layout
}};

}  // namespace zinc::model::sets
