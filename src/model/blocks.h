// Shared block builders: the pieces every family's layer loop is made of. Each emits ops into a
// GraphBuilder and returns the buffer holding its result, [n_tokens, n_embd] unless stated.
#pragma once

#include <string>

#include "graph/graph.h"
#include "model/model.h"

namespace zinc::model {

using graph::BufferId;
using graph::GraphBuilder;

// x = token embeddings [n_tokens, n_embd].
BufferId embed_tokens(GraphBuilder& g, const Model& m);

// x += residual (when valid; x is updated in place), then returns rmsnorm(x) * weight.
BufferId residual_norm(GraphBuilder& g, const Model& m, BufferId x, BufferId residual, WeightId norm, int layer);

struct AttentionOptions {
  // The Q projection yields [query(d), gate(d)] per head and the output is multiplied by
  // sigmoid(gate) (Qwen3-Next / Qwen3.5 full attention, model-spec 3.5.1).
  bool output_gate = false;
};

// Q/K/V projections (+ optional biases), optional QK-norm, RoPE, KV write, causal GQA attention
// over the cache, output projection. h is the normalised input.
BufferId attention_block(GraphBuilder& g, const Model& m, int layer, BufferId h, const AttentionOptions& opt);

// W_down (silu(W_gate h) * (W_up h)).
BufferId swiglu_ffn(GraphBuilder& g, const Model& m, int layer, BufferId h);

// Routed experts (softmax, top-k, renormalised) plus the sigmoid-gated shared expert when the
// model has one (model-spec 3.0.6).
BufferId moe_ffn(GraphBuilder& g, const Model& m, int layer, BufferId h);

// Dense or MoE by the model's FfnKind.
BufferId ffn_block(GraphBuilder& g, const Model& m, int layer, BufferId h);

// Gated DeltaNet linear attention (model-spec 3.8) with conv and recurrent state in the cache.
BufferId delta_net_block(GraphBuilder& g, const Model& m, int layer, BufferId h);

// x += residual, output-row selection, final norm and LM head: logits [n_outputs, n_vocab].
BufferId output_logits(GraphBuilder& g, const Model& m, BufferId x, BufferId residual);

// "blk.3.attn_q" for layer >= 0, else `what`.
std::string layer_name(int layer, const char* what);

}  // namespace zinc::model
