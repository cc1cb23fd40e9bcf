// Each family declares its weights once, as a table of WeightSpec: GGUF name, shape in
// hyper-parameter terms, which layers have it, and whether it is required. The same table
// drives binding, validation messages ("blk.0.attn_q.weight: shape [256, 128], expected
// [n_embd=256, n_head*head_dim_k=256]") and the load tests.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <string>

#include "model/hparams.h"

namespace zinc::model {

enum class WeightId : uint8_t {
  kTokenEmbd, kOutputNorm, kOutput, kOutputBias, kRopeFreqs,
  kAttnNorm, kAttnQ, kAttnK, kAttnV, kAttnQBias, kAttnKBias, kAttnVBias, kAttnOut, kAttnOutBias,
  kAttnQNorm, kAttnKNorm, kFfnNorm, kPostAttnNorm,
  kFfnGate, kFfnUp, kFfnDown,
  kFfnGateInp, kFfnGateExps, kFfnUpExps, kFfnDownExps,
  kFfnGateInpShexp, kFfnGateShexp, kFfnUpShexp, kFfnDownShexp,
  kSsmQkv, kSsmGate, kSsmConv1d, kSsmDt, kSsmA, kSsmBeta, kSsmAlpha, kSsmNorm, kSsmOut,
  kCount
};
constexpr size_t kNumWeightIds = size_t(WeightId::kCount);

// A dimension in hyper-parameter terms.
enum class Dim : uint8_t {
  kNone,      // unused trailing dimension
  kEmbd,      // n_embd
  kVocab,     // n_vocab
  kQ,         // n_head * head_dim_k
  kQGate,     // 2 * n_head * head_dim_k (query + output gate)
  kKv,        // n_head_kv * head_dim_k
  kVKv,       // n_head_kv * head_dim_v
  kAttnOut,   // n_head * head_dim_v
  kHeadK,     // head_dim_k
  kRotHalf,   // n_rot / 2
  kFf,        // n_ff (per layer)
  kExpert,    // n_expert
  kFfExp,     // n_ff_exp
  kFfShexp,   // n_ff_shexp
  kConvK,     // ssm conv kernel
  kConvDim,   // 2 * key_dim + value_dim
  kSsmValue,  // n_v_heads * d_v
  kSsmVHeads, // n_v_heads
  kSsmDv,     // d_v
};

// Which layers (or none: global) carry a weight.
enum class Scope : uint8_t {
  kGlobal,
  kEveryLayer,
  kAttention,    // layers with LayerKind::kAttention
  kDeltaNet,     // layers with LayerKind::kDeltaNet
  kDenseFfn,     // FfnKind::kDense
  kMoeFfn,       // FfnKind::kMoe or kMoeShared
  kSharedExpert  // FfnKind::kMoeShared
};

enum class Need : uint8_t {
  kRequired,
  kOptional,
  kUnsupported,  // zinc cannot run a file that has it (an error names the tensor)
};

struct WeightSpec {
  WeightId id;
  const char* name;  // "blk.%d.attn_q.weight" for layer weights, "output.weight" for global ones
  std::array<Dim, 3> shape;
  Scope scope;
  Need need;
  // Element-wise weights (norms, biases, gates, conv kernels) are used as float32; other types are
  // converted at load. Matrices stay as stored.
  bool elementwise = false;
};

int64_t dim_value(Dim d, const HParams& hp, int layer);
const char* dim_name(Dim d);
bool scope_applies(Scope s, const HParams& hp, int layer);  // layer < 0: global weights
std::string weight_name(const WeightSpec& spec, int layer);

}  // namespace zinc::model
