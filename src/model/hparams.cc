#include "model/hparams.h"

#include <cmath>

#include "gguf/file.h"
#include "model/family.h"

namespace zinc::model {

Result<uint32_t> KeyReader::u32(std::string_view k) const {
  ZINC_ASSIGN_OR_RETURN(auto v, file_.find_u32(key(k)));
  if (!v) return error("missing metadata key '%s'", key(k).c_str());
  return *v;
}

Result<uint32_t> KeyReader::u32_or(std::string_view k, uint32_t dflt) const {
  ZINC_ASSIGN_OR_RETURN(auto v, file_.find_u32(key(k)));
  return v ? *v : dflt;
}

Result<float> KeyReader::f32(std::string_view k) const {
  ZINC_ASSIGN_OR_RETURN(auto v, file_.find_f32(key(k)));
  if (!v) return error("missing metadata key '%s'", key(k).c_str());
  return *v;
}

Result<float> KeyReader::f32_or(std::string_view k, float dflt) const {
  ZINC_ASSIGN_OR_RETURN(auto v, file_.find_f32(key(k)));
  return v ? *v : dflt;
}

Result<std::optional<std::string_view>> KeyReader::str(std::string_view k) const { return file_.find_string(key(k)); }

bool KeyReader::has(std::string_view k) const { return file_.find(key(k)) != nullptr; }

Result<std::vector<uint32_t>> KeyReader::u32_per_layer(std::string_view k, uint32_t n_layer,
                                                       std::optional<uint32_t> dflt) const {
  const std::string name = key(k);
  const gguf::ValueView* v = file_.find(name);
  if (!v) {
    if (!dflt) return error("missing metadata key '%s'", name.c_str());
    return std::vector<uint32_t>(n_layer, *dflt);
  }
  if (v->type != gguf::ValueType::ARRAY) {
    ZINC_ASSIGN_OR_RETURN(uint32_t x, u32(k));
    return std::vector<uint32_t>(n_layer, x);
  }
  ZINC_ASSIGN_OR_RETURN(auto arr, int_array(k, n_layer));
  return std::vector<uint32_t>(arr.begin(), arr.end());
}

Result<std::vector<int32_t>> KeyReader::int_array(std::string_view k, size_t n) const {
  const std::string name = key(k);
  const gguf::ValueView* v = file_.find(name);
  if (!v) return error("missing metadata key '%s'", name.c_str());
  if (v->type != gguf::ValueType::ARRAY ||
      (v->array_type != gguf::ValueType::INT32 && v->array_type != gguf::ValueType::UINT32))
    return error("metadata key '%s' must be an array of INT32 or UINT32", name.c_str());
  if (v->array_count != n)
    return error("metadata key '%s' has %llu entries, expected %zu", name.c_str(), (unsigned long long)v->array_count, n);
  std::vector<int32_t> out(n);
  for (size_t i = 0; i < n; ++i) {
    const int64_t x = v->array_int(i);
    if (x < 0 || x > INT32_MAX) return error("metadata key '%s'[%zu] = %lld is out of range", name.c_str(), i, (long long)x);
    out[i] = int32_t(x);
  }
  return out;
}

namespace {

Result<uint32_t> vocab_size(const gguf::File& file, const KeyReader& keys) {
  ZINC_ASSIGN_OR_RETURN(const gguf::ValueView* tokens, file.find_array("tokenizer.ggml.tokens", gguf::ValueType::STRING));
  if (tokens) return uint32_t(tokens->array_count);
  if (keys.has("vocab_size")) return keys.u32("vocab_size");
  if (const auto* t = file.find_tensor("token_embd.weight")) return uint32_t(t->ne[1]);
  return error("cannot tell the vocabulary size: no tokenizer.ggml.tokens, %s or token_embd.weight",
               keys.key("vocab_size").c_str());
}

Status load_rope(const KeyReader& keys, HParams& hp) {
  RopeConfig& r = hp.rope;
  ZINC_ASSIGN_OR_RETURN(uint32_t n_rot, keys.u32_or("rope.dimension_count", hp.n_head_dim_k));
  if (n_rot == 0 || n_rot % 2 != 0 || n_rot > hp.n_head_dim_k)
    return error("%s = %u must be even and at most the head size %u", keys.key("rope.dimension_count").c_str(),
                 n_rot, hp.n_head_dim_k);
  r.n_rot = int32_t(n_rot);
  ZINC_ASSIGN_OR_RETURN(r.freq_base, keys.f32_or("rope.freq_base", 10000.f));
  ZINC_ASSIGN_OR_RETURN(auto type, keys.str("rope.scaling.type"));
  ZINC_ASSIGN_OR_RETURN(float factor, keys.f32_or("rope.scaling.factor", 0.f));
  if (factor == 0.f) {
    ZINC_ASSIGN_OR_RETURN(factor, keys.f32_or("rope.scale_linear", 0.f));
  }
  const std::string_view kind = type ? *type : "linear";
  if (kind != "none" && kind != "linear" && kind != "yarn")
    return error("rope scaling type '%.*s' is not supported", int(kind.size()), kind.data());
  r.freq_scale = (kind == "none" || factor == 0.f) ? 1.f : 1.f / factor;
  r.yarn = kind == "yarn";
  ZINC_ASSIGN_OR_RETURN(r.attn_factor, keys.f32_or("rope.scaling.attn_factor", 1.f));
  ZINC_ASSIGN_OR_RETURN(r.beta_fast, keys.f32_or("rope.scaling.yarn_beta_fast", 32.f));
  ZINC_ASSIGN_OR_RETURN(r.beta_slow, keys.f32_or("rope.scaling.yarn_beta_slow", 1.f));
  ZINC_ASSIGN_OR_RETURN(r.n_ctx_orig, keys.u32_or("rope.scaling.original_context_length", hp.n_ctx_train));
  return ok_status();
}

}  // namespace

Result<HParams> load_hparams(const gguf::File& file, const Family& family) {
  KeyReader keys(file, family.arch);
  HParams hp;
  hp.arch = std::string(family.arch);
  ZINC_ASSIGN_OR_RETURN(hp.n_vocab, vocab_size(file, keys));
  ZINC_ASSIGN_OR_RETURN(hp.n_ctx_train, keys.u32("context_length"));
  ZINC_ASSIGN_OR_RETURN(hp.n_embd, keys.u32("embedding_length"));
  ZINC_ASSIGN_OR_RETURN(hp.n_layer_file, keys.u32("block_count"));
  if (hp.n_embd == 0 || hp.n_layer_file == 0 || hp.n_vocab == 0)
    return error("embedding_length (%u), block_count (%u) and the vocabulary size (%u) must be positive", hp.n_embd,
                 hp.n_layer_file, hp.n_vocab);
  hp.n_layer = hp.n_layer_file;
  const uint32_t L = hp.n_layer_file;
  ZINC_ASSIGN_OR_RETURN(hp.n_ff, keys.u32_per_layer("feed_forward_length", L, 0u));
  ZINC_ASSIGN_OR_RETURN(hp.n_head, keys.u32_per_layer("attention.head_count", L, std::nullopt));
  ZINC_ASSIGN_OR_RETURN(hp.n_head_kv, keys.u32_per_layer("attention.head_count_kv", L, 0u));
  for (uint32_t i = 0; i < L; ++i)
    if (!keys.has("attention.head_count_kv")) hp.n_head_kv[i] = hp.n_head[i];
  const uint32_t head0 = hp.n_head[0] ? hp.n_head[0] : 1;
  ZINC_ASSIGN_OR_RETURN(hp.n_head_dim_k, keys.u32_or("attention.key_length", hp.n_embd / head0));
  ZINC_ASSIGN_OR_RETURN(hp.n_head_dim_v, keys.u32_or("attention.value_length", hp.n_embd / head0));
  ZINC_ASSIGN_OR_RETURN(hp.rms_eps, keys.f32("attention.layer_norm_rms_epsilon"));
  if (!(hp.rms_eps > 0.f) || !std::isfinite(hp.rms_eps))
    return error("%s = %g must be positive", keys.key("attention.layer_norm_rms_epsilon").c_str(), double(hp.rms_eps));
  ZINC_RETURN_IF_ERROR(load_rope(keys, hp));
  hp.rope.mode = family.rope_mode;
  hp.layer_kind.assign(hp.n_layer, LayerKind::kAttention);
  ZINC_RETURN_IF_ERROR(family.load_arch(keys, hp));

  for (uint32_t i = 0; i < hp.n_layer; ++i) {
    if (hp.layer_kind[i] != LayerKind::kAttention) continue;
    if (hp.n_head[i] == 0 || hp.n_head_kv[i] == 0 || hp.n_head[i] % hp.n_head_kv[i] != 0)
      return error("layer %u: head_count %u must be a positive multiple of head_count_kv %u", i, hp.n_head[i],
                   hp.n_head_kv[i]);
    if (hp.n_head_dim_k == 0 || hp.n_head_dim_v == 0)
      return error("attention key_length (%u) and value_length (%u) must be positive", hp.n_head_dim_k,
                   hp.n_head_dim_v);
  }
  if (hp.ffn == FfnKind::kDense)
    for (uint32_t i = 0; i < hp.n_layer; ++i)
      if (hp.n_ff[i] == 0) return error("missing metadata key '%s' (dense FFN width)", keys.key("feed_forward_length").c_str());
  return hp;
}

}  // namespace zinc::model
