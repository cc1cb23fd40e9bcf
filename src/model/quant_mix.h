// Quantization mixes: which type each tensor of a model gets for a target such as Q4_K_M,
// following llama.cpp's rules (llama-quant.cpp, llama_tensor_get_type) so that zinc's files
// have the same per-tensor types as llama-quantize's.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "core/tensor_type.h"

namespace zinc::gguf {
class File;
}

namespace zinc::model {

struct QuantMix {
  std::string_view name;  // "Q4_K_M"
  uint32_t file_type;     // general.file_type: llama.cpp's llama_ftype value
  TensorType base_type;   // the type of most tensors
};

// F32 F16 BF16 Q8_0 Q4_0 Q4_1 Q5_0 Q5_1 Q2_K Q3_K_S Q3_K_M Q3_K_L Q4_K_S Q4_K_M Q5_K_S Q5_K_M Q6_K.
std::span<const QuantMix> quant_mixes();
const QuantMix* find_quant_mix(std::string_view name);  // case-insensitive; nullptr if unknown
std::string quant_mix_list();                           // "F32, F16, ..." for messages

// The hyper-parameters the rules look at.
struct MixModel {
  std::string arch;        // general.architecture
  uint32_t n_layer = 0;    // {arch}.block_count
  uint32_t n_head = 0;     // layer 0's query heads
  uint32_t n_head_kv = 0;  // layer 0's KV heads
  uint32_t n_expert = 0;   // routed experts; 0 for dense models
};
// Reads MixModel from a file's metadata. Without block_count, n_layer = highest blk.N + 1.
Result<MixModel> mix_model_from_gguf(const gguf::File& f);

struct MixTensor {
  std::string name;
  std::array<int64_t, 4> ne{1, 1, 1, 1};
  TensorType type = TensorType::F32;  // as stored in the source; kept by tensors that are never quantized
};

struct MixPlan {
  std::vector<TensorType> types;  // one per input tensor, same order
  int n_fallback = 0;             // tensors whose row length forced another type
};

// True when the rules may change this tensor's type: at least 2-D (trailing 1s do not count),
// named *weight, not a norm, router (ffn_gate_inp), ssm_conv1d or one of llama.cpp's exceptions.
bool tensor_is_quantizable(std::string_view name, const std::array<int64_t, 4>& ne);

// Picks every tensor's type for `mix`. The result does not depend on the order of `tensors`
// (the rules run in llama.cpp's order: non-layer tensors, then by layer, then by name).
// Differences from llama.cpp: where it aborts (no fallback for a Q4_0/Q8_0... row length),
// the tensor falls back to F16. Errors: an expert tensor whose blk.N is outside [0, n_layer).
Result<MixPlan> plan_quant_mix(const QuantMix& mix, const MixModel& model, std::span<const MixTensor> tensors);

}  // namespace zinc::model
