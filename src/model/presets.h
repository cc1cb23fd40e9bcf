// Model presets for `zinc make-model`: the hyper-parameters of real architectures at small
// (test-fixture) and real sizes, and from them the exact tensor table and metadata a converted
// GGUF of that architecture has (model-spec §3). Weights are filled by presets_weights.h.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "gguf/value.h"

namespace zinc::model {

struct PresetConfig {
  std::string_view name;  // "qwen35moe", "llama3-8b"
  std::string_view arch;  // general.architecture
  uint32_t n_vocab = 512;
  uint32_t n_ctx_train = 4096;
  uint32_t n_embd = 0;
  uint32_t n_layer = 0;
  uint32_t n_ff = 0;         // dense FFN width (feed_forward_length)
  uint32_t n_head = 0;
  uint32_t n_head_kv = 0;
  uint32_t head_dim = 0;     // attention.key_length = value_length
  uint32_t n_rot = 0;        // rope.dimension_count
  float rope_freq_base = 10000.0f;
  float rms_eps = 1e-6f;
  bool tied_output = false;  // no output.weight: the head reuses token_embd
  bool qkv_bias = false;     // qwen2: attn_{q,k,v}.bias
  bool qk_norm = false;      // qwen3*: attn_{q,k}_norm
  // Llama 3.1+ rope scaling baked into rope_freqs.weight (factor 0: no such tensor).
  float rope_scaling_factor = 0.0f;
  uint32_t rope_scaling_orig_ctx = 8192;
  // Mixture of experts (n_expert 0: dense).
  uint32_t n_expert = 0;
  uint32_t n_expert_used = 0;
  uint32_t n_ff_exp = 0;
  uint32_t n_ff_shexp = 0;   // shared expert width (qwen35moe); 0: no shared expert
  // Qwen3.5 hybrid (Gated DeltaNet linear attention; full attention every interval-th layer).
  uint32_t full_attention_interval = 0;  // 0: every layer is full attention
  uint32_t ssm_conv_kernel = 0;
  uint32_t ssm_d_state = 0;   // d_k of the linear-attention heads
  uint32_t ssm_n_group = 0;   // H_k
  uint32_t ssm_dt_rank = 0;   // H_v
  uint32_t ssm_d_inner = 0;   // H_v * d_v
  std::array<int32_t, 4> rope_sections{};

  bool is_full_attention(uint32_t il) const {
    return full_attention_interval == 0 || (il + 1) % full_attention_interval == 0;
  }
};

std::span<const PresetConfig> presets();
const PresetConfig* find_preset(std::string_view name);
std::string preset_list();  // "llama, qwen2, ..." for messages and --help

struct PresetTensor {
  std::string name;
  std::vector<int64_t> ne;  // ne[0] contiguous
};

// Every tensor, in the order converted files list them.
std::vector<PresetTensor> preset_tensors(const PresetConfig& c);

using Metadata = std::vector<std::pair<std::string, gguf::Value>>;

// general.architecture, general.name and every {arch}.* key, with the types llama.cpp reads
// (u32 counts, f32 floats, i32[4] rope sections). No tokenizer keys.
Metadata preset_hparams(const PresetConfig& c, const std::string& model_name);

// A synthetic SentencePiece-style vocabulary of n_vocab tokens (n_vocab >= 259): <unk> <s> </s>,
// the 256 byte tokens <0x00>..<0xFF>, then ▁-prefixed and bare lower-case pieces. The same keys
// and types as the shared fixtures' tokenizer.* block. Deterministic.
Metadata synthetic_vocab(uint32_t n_vocab);

}  // namespace zinc::model
