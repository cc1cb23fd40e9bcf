// Typed hyper-parameters of a model, read from GGUF metadata with strict types (model-spec
// 3.0.1): a u32 key must be UINT32, a float key FLOAT32; a missing required key is an error that
// names it. Keys that may be per-layer arrays are stored per layer.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "graph/ops.h"

namespace zinc::gguf {
class File;
}

namespace zinc::model {

struct Family;

enum class LayerKind : uint8_t { kAttention, kDeltaNet };
enum class FfnKind : uint8_t { kDense, kMoe, kMoeShared };

struct RopeConfig {
  graph::RopeMode mode = graph::RopeMode::kNorm;
  int32_t n_rot = 0;
  float freq_base = 10000.f;
  float freq_scale = 1.f;  // 1 / rope.scaling.factor
  bool yarn = false;
  float attn_factor = 1.f;  // rope.scaling.attn_factor
  float beta_fast = 32.f, beta_slow = 1.f;
  uint32_t n_ctx_orig = 0;
  std::array<int32_t, 4> sections{0, 0, 0, 0};  // IMROPE only
};

struct MoeParams {
  uint32_t n_expert = 0;
  uint32_t n_expert_used = 0;
  uint32_t n_ff_exp = 0;
  uint32_t n_ff_shexp = 0;  // shared expert width (kMoeShared only)
};

// Gated DeltaNet (linear attention) sizes, model-spec 3.5 / 3.8.
struct DeltaNetParams {
  uint32_t conv_kernel = 0;  // K
  uint32_t n_k_heads = 0;    // ssm.group_count
  uint32_t d_k = 0;          // ssm.state_size
  uint32_t n_v_heads = 0;    // ssm.time_step_rank
  uint32_t d_v = 0;          // ssm.inner_size / n_v_heads
  uint32_t full_attention_interval = 4;
  int64_t key_dim() const { return int64_t(n_k_heads) * d_k; }
  int64_t value_dim() const { return int64_t(n_v_heads) * d_v; }
  int64_t conv_dim() const { return 2 * key_dim() + value_dim(); }
};

struct HParams {
  std::string arch;
  uint32_t n_vocab = 0;
  uint32_t n_ctx_train = 0;
  uint32_t n_embd = 0;
  uint32_t n_layer = 0;        // layers the forward pass runs
  uint32_t n_layer_file = 0;   // block_count (includes MTP layers)
  uint32_t n_head_dim_k = 0;   // attention.key_length
  uint32_t n_head_dim_v = 0;   // attention.value_length
  std::vector<uint32_t> n_head, n_head_kv, n_ff;  // per layer (n_layer_file entries)
  float rms_eps = 0.f;
  RopeConfig rope;
  FfnKind ffn = FfnKind::kDense;
  std::optional<MoeParams> moe;
  std::optional<DeltaNetParams> delta_net;
  std::vector<LayerKind> layer_kind;  // per executed layer
};

// Reads the hyper-parameters of `family` from `file` (general.architecture already matched).
Result<HParams> load_hparams(const gguf::File& file, const Family& family);

// Reads `{arch}.<key>` values with the strict rules above; the family loaders use it.
class KeyReader {
 public:
  KeyReader(const gguf::File& file, std::string_view arch) : file_(file), arch_(arch) {}
  std::string key(std::string_view k) const { return arch_ + "." + std::string(k); }
  Result<uint32_t> u32(std::string_view k) const;                   // required
  Result<uint32_t> u32_or(std::string_view k, uint32_t dflt) const;  // optional
  Result<float> f32(std::string_view k) const;
  Result<float> f32_or(std::string_view k, float dflt) const;
  // A u32 scalar (same for every layer) or an integer array of exactly n_layer entries.
  Result<std::vector<uint32_t>> u32_per_layer(std::string_view k, uint32_t n_layer, std::optional<uint32_t> dflt) const;
  // An INT32 or UINT32 array of exactly `n` non-negative entries.
  Result<std::vector<int32_t>> int_array(std::string_view k, size_t n) const;
  Result<std::optional<std::string_view>> str(std::string_view k) const;
  bool has(std::string_view k) const;

 private:
  const gguf::File& file_;
  std::string arch_;
};

}  // namespace zinc::model
