#include "model/quant_mix.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <cstdlib>
#include <numeric>

#include "gguf/file.h"

namespace zinc::model {
namespace {

using T = TensorType;

// llama_ftype values (llama.h).
enum FType : uint32_t {
  kAllF32 = 0, kF16 = 1, kQ4_0 = 2, kQ4_1 = 3, kQ8_0 = 7, kQ5_0 = 8, kQ5_1 = 9, kQ2_K = 10,
  kQ3_K_S = 11, kQ3_K_M = 12, kQ3_K_L = 13, kQ4_K_S = 14, kQ4_K_M = 15, kQ5_K_S = 16, kQ5_K_M = 17,
  kQ6_K = 18, kBF16 = 32,
};

constexpr std::array<QuantMix, 17> kMixes = {{
    {"F32", kAllF32, T::F32},   {"F16", kF16, T::F16},        {"BF16", kBF16, T::BF16},
    {"Q8_0", kQ8_0, T::Q8_0},   {"Q4_0", kQ4_0, T::Q4_0},     {"Q4_1", kQ4_1, T::Q4_1},
    {"Q5_0", kQ5_0, T::Q5_0},   {"Q5_1", kQ5_1, T::Q5_1},     {"Q2_K", kQ2_K, T::Q2_K},
    {"Q3_K_S", kQ3_K_S, T::Q3_K}, {"Q3_K_M", kQ3_K_M, T::Q3_K}, {"Q3_K_L", kQ3_K_L, T::Q3_K},
    {"Q4_K_S", kQ4_K_S, T::Q4_K}, {"Q4_K_M", kQ4_K_M, T::Q4_K}, {"Q5_K_S", kQ5_K_S, T::Q5_K},
    {"Q5_K_M", kQ5_K_M, T::Q5_K}, {"Q6_K", kQ6_K, T::Q6_K},
}};

// Broad tensor roles, as llama.cpp's tensor_category.
enum class Category { kTokenEmbd, kAttnQ, kAttnV, kAttnK, kAttnQkv, kAttnKvB, kAttnOutput, kFfnUp, kFfnGate,
                      kFfnDown, kOutput, kOther };

bool has(std::string_view s, std::string_view part) { return s.find(part) != std::string_view::npos; }

Category category(std::string_view name) {
  if (name == "output.weight") return Category::kOutput;
  if (name == "token_embd.weight" || name == "per_layer_token_embd.weight") return Category::kTokenEmbd;
  if (has(name, "attn_qkv.weight")) return Category::kAttnQkv;
  if (has(name, "attn_kv_b.weight")) return Category::kAttnKvB;
  if (has(name, "attn_v.weight")) return Category::kAttnV;
  if (has(name, "attn_k.weight")) return Category::kAttnK;
  if (has(name, "attn_q.weight")) return Category::kAttnQ;
  if (has(name, "attn_output.weight")) return Category::kAttnOutput;
  if (has(name, "ffn_up")) return Category::kFfnUp;
  if (has(name, "ffn_gate")) return Category::kFfnGate;
  if (has(name, "ffn_down")) return Category::kFfnDown;
  return Category::kOther;
}

bool is_attn_v_like(Category c) { return c == Category::kAttnV || c == Category::kAttnQkv || c == Category::kAttnKvB; }

bool is_quantized(T t) { return type_info(t).block_elems > 1; }

// The N of "blk.N.", or -1 (llama.cpp's sscanf("blk.%d.")).
int layer_of(std::string_view name) {
  if (name.substr(0, 4) != "blk.") return -1;
  std::string digits(name.substr(4, 12));
  char* end = nullptr;
  const long v = std::strtol(digits.c_str(), &end, 10);
  if (end == digits.c_str()) return -1;
  return int(std::clamp<long>(v, -1000000, 1000000));
}

bool use_more_bits(int i_layer, int n_layers) {
  return i_layer < n_layers / 8 || i_layer >= 7 * n_layers / 8 || (i_layer - n_layers / 8) % 3 == 2;
}

struct State {
  const MixModel& model;
  uint32_t ftype;
  bool tied_embeddings = true;
  bool is_70b = false;
  int n_attention_wv = 0;
  int i_attention_wv = 0;
  int i_ffn_down = 0;
  int n_fallback = 0;
};

uint32_t n_gqa(const MixModel& m) { return m.n_head_kv ? m.n_head / m.n_head_kv : 0; }

// The layer an FFN tensor belongs to: from its name for MoE models (experts are not
// consecutive in every file), else the running count of such tensors.
Result<int> ffn_layer(const State& s, int counter, const std::string& name) {
  if (std::max<uint32_t>(1, s.model.n_expert) <= 1) return counter;
  const int il = layer_of(name);
  if (name.rfind("blk.", 0) != 0 || il < 0 || il >= int(s.model.n_layer))
    return error("tensor '%s': layer %d is outside [0, %u) (block_count)", name.c_str(), il, s.model.n_layer);
  return il;
}

// llama_tensor_get_type_impl for the mixes above (no imatrix, no overrides).
Result<T> mixed_type(State& s, T t, const MixTensor& tensor, Category cat) {
  const uint32_t f = s.ftype;
  const uint32_t n_expert = s.model.n_expert;
  const bool falcon = s.model.arch == "falcon";
  if (cat == Category::kOutput || (s.tied_embeddings && cat == Category::kTokenEmbd)) {
    if (falcon || tensor.ne[0] % type_info(t).block_elems != 0) return T::Q8_0;
    return t == T::Q8_0 ? t : T::Q6_K;
  }
  if (cat == Category::kTokenEmbd) return t;
  if (is_attn_v_like(cat)) {
    if (f == kQ2_K) t = n_gqa(s.model) >= 4 ? T::Q4_K : T::Q3_K;
    else if (f == kQ3_K_M) t = s.i_attention_wv < 2 ? T::Q5_K : T::Q4_K;
    else if (f == kQ3_K_L) t = T::Q5_K;
    else if ((f == kQ4_K_M || f == kQ5_K_M) && use_more_bits(s.i_attention_wv, s.n_attention_wv)) t = T::Q6_K;
    else if (f == kQ4_K_S && s.i_attention_wv < 4) t = T::Q5_K;
    if (s.is_70b && (t == T::Q3_K || t == T::Q4_K)) t = T::Q5_K;
    if (n_expert == 8) t = T::Q8_0;
    ++s.i_attention_wv;
    return t;
  }
  if (cat == Category::kAttnK) return n_expert == 8 ? T::Q8_0 : t;
  if (cat == Category::kFfnDown) {
    ZINC_ASSIGN_OR_RETURN(const int il, ffn_layer(s, s.i_ffn_down, tensor.name));
    const int n = int(s.model.n_layer);
    if (f == kQ2_K) t = T::Q3_K;
    else if (f == kQ3_K_M) t = il < n / 16 ? T::Q5_K : !falcon || use_more_bits(il, n) ? T::Q4_K : T::Q3_K;
    else if (f == kQ3_K_L) t = falcon ? T::Q4_K : T::Q5_K;
    else if (f == kQ4_K_M) {
      if (falcon) t = il < n / 16 ? T::Q6_K : use_more_bits(il, n) ? T::Q5_K : T::Q4_K;
      else if (use_more_bits(il, n)) t = T::Q6_K;
    }
    else if (f == kQ5_K_M && use_more_bits(il, n)) t = T::Q6_K;
    else if (f == kQ4_K_S && !falcon && il < n / 8) t = T::Q5_K;
    ++s.i_ffn_down;
    return t;
  }
  if (cat == Category::kAttnOutput) {
    if (falcon) return f == kQ3_K_L ? T::Q4_K : t;
    if (n_expert == 8) {
      if (f == kQ2_K || f == kQ3_K_S || f == kQ3_K_M || f == kQ4_K_S || f == kQ4_K_M) t = T::Q5_K;
    } else {
      if (f == kQ2_K) t = T::Q3_K;
      else if (f == kQ3_K_M) t = T::Q4_K;
      else if (f == kQ3_K_L) t = T::Q5_K;
    }
    return t;
  }
  return t;
}

// A type whose block divides ne[0] (llama.cpp's tensor_type_fallback).
T fallback(State& s, const MixTensor& tensor, T t) {
  const int64_t ncols = tensor.ne[0];
  if (ncols % type_info(t).block_elems == 0) return t;
  ++s.n_fallback;
  T r = T::F16;
  switch (t) {
    case T::Q2_K: case T::Q3_K: r = T::Q4_0; break;
    case T::Q4_K: r = T::Q5_0; break;
    case T::Q5_K: r = T::Q5_1; break;
    case T::Q6_K: r = T::Q8_0; break;
    default: break;  // llama.cpp aborts here
  }
  return ncols % type_info(r).block_elems == 0 ? r : T::F16;
}

Result<uint32_t> first_u32(const gguf::File& f, const std::string& key, uint32_t fallback_value) {
  const gguf::ValueView* v = f.find(key);
  if (!v) return fallback_value;
  if (v->type == gguf::ValueType::ARRAY && v->array_type != gguf::ValueType::STRING && v->array_count > 0)
    return uint32_t(std::clamp<int64_t>(v->array_int(0), 0, UINT32_MAX));
  ZINC_ASSIGN_OR_RETURN(auto u, f.find_uint(key));
  return uint32_t(std::min<uint64_t>(*u, UINT32_MAX));
}

}  // namespace

std::span<const QuantMix> quant_mixes() { return kMixes; }

const QuantMix* find_quant_mix(std::string_view name) {
  for (const auto& m : kMixes) {
    if (m.name.size() != name.size()) continue;
    bool same = true;
    for (size_t i = 0; i < name.size() && same; ++i)
      same = std::toupper(static_cast<unsigned char>(name[i])) == m.name[i];
    if (same) return &m;
  }
  return nullptr;
}

std::string quant_mix_list() {
  std::string s;
  for (const auto& m : kMixes) s += (s.empty() ? "" : ", ") + std::string(m.name);
  return s;
}

bool tensor_is_quantizable(std::string_view name, const std::array<int64_t, 4>& ne) {
  int n_dims = 1;
  for (int i = 3; i >= 1; --i)
    if (ne[i] > 1) {
      n_dims = i + 1;
      break;
    }
  if (n_dims < 2) return false;
  if (name.size() < 6 || name.substr(name.size() - 6) != "weight") return false;
  static constexpr std::string_view kNever[] = {
      "_norm.weight", "ffn_gate_inp.weight", "ffn_gate_tid2eid.weight", "altup", "laurel", "per_layer_model_proj",
      "ssm_conv1d", "shortconv.conv.weight", "indexer.k_proj.weight", "indexer.q_proj.weight", "time_mix_first.weight",
      "time_mix_w0.weight", "time_mix_w1.weight", "time_mix_w2.weight", "time_mix_v0.weight", "time_mix_v1.weight",
      "time_mix_v2.weight", "time_mix_a0.weight", "time_mix_a1.weight", "time_mix_a2.weight", "time_mix_g1.weight",
      "time_mix_g2.weight", "time_mix_decay_w1.weight", "time_mix_decay_w2.weight", "time_mix_lerp_fused.weight",
      "attn_rel_b.weight", ".position_embd", "sam.pos_embd", "sam.neck.", "sam.net_", ".rel_pos", ".patch_embd",
      ".patch_merger", "a.rvq.codebook", "mm.a.code_embd"};
  for (auto part : kNever)
    if (has(name, part)) return false;
  return name != "position_embd.weight" && name != "token_types.weight";
}

Result<MixModel> mix_model_from_gguf(const gguf::File& f) {
  MixModel m;
  m.arch = f.architecture();
  const std::string p = m.arch + ".";
  int max_layer = -1;
  for (const auto& t : f.tensors()) max_layer = std::max(max_layer, layer_of(t.name));
  ZINC_ASSIGN_OR_RETURN(m.n_layer, first_u32(f, p + "block_count", uint32_t(max_layer + 1)));
  ZINC_ASSIGN_OR_RETURN(m.n_head, first_u32(f, p + "attention.head_count", 0));
  ZINC_ASSIGN_OR_RETURN(m.n_head_kv, first_u32(f, p + "attention.head_count_kv", m.n_head));
  ZINC_ASSIGN_OR_RETURN(m.n_expert, first_u32(f, p + "expert_count", 0));
  return m;
}

Result<MixPlan> plan_quant_mix(const QuantMix& mix, const MixModel& model, std::span<const MixTensor> tensors) {
  State s{model, mix.file_type};
  s.is_70b = model.arch == "llama" && model.n_layer == 80 && model.n_head != model.n_head_kv;
  std::vector<Category> cats(tensors.size());
  for (size_t i = 0; i < tensors.size(); ++i) {
    cats[i] = category(tensors[i].name);
    if (is_attn_v_like(cats[i])) ++s.n_attention_wv;
    if (cats[i] == Category::kOutput) s.tied_embeddings = false;
  }
  // llama.cpp visits tensors sorted by (layer, name); the counters above depend on that order.
  std::vector<size_t> order(tensors.size());
  std::iota(order.begin(), order.end(), 0);
  std::vector<int> layers(tensors.size());
  for (size_t i = 0; i < tensors.size(); ++i) layers[i] = layer_of(tensors[i].name);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    if (layers[a] != layers[b]) return layers[a] < layers[b];
    return tensors[a].name < tensors[b].name;
  });

  MixPlan plan;
  plan.types.resize(tensors.size());
  for (size_t i : order) {
    const MixTensor& t = tensors[i];
    if (!tensor_is_quantizable(t.name, t.ne)) {
      plan.types[i] = t.type;
      continue;
    }
    T type = mix.base_type;
    if (is_quantized(type)) {
      ZINC_ASSIGN_OR_RETURN(type, mixed_type(s, type, t, cats[i]));
      type = fallback(s, t, type);
    }
    plan.types[i] = type;
  }
  plan.n_fallback = s.n_fallback;
  return plan;
}

}  // namespace zinc::model
