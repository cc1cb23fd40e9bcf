#include "model/presets.h"

#include <cstdio>

namespace zinc::model {
namespace {

PresetConfig base(std::string_view name, std::string_view arch) {
  PresetConfig c;
  c.name = name;
  c.arch = arch;
  return c;
}

// The small presets reproduce ../shared/models/<arch>-f32.gguf (tensor table and hparams).
PresetConfig small_llama() {
  PresetConfig c = base("llama", "llama");
  c.n_embd = 256, c.n_layer = 4, c.n_ff = 768, c.n_head = 8, c.n_head_kv = 2, c.head_dim = 32, c.n_rot = 32;
  c.rope_freq_base = 500000.0f, c.rms_eps = 1e-5f;
  return c;
}

PresetConfig small_qwen(std::string_view name, uint32_t n_layer) {
  PresetConfig c = base(name, name);
  c.n_embd = 256, c.n_layer = n_layer, c.n_ff = 512, c.n_head = 4, c.n_head_kv = 2, c.head_dim = 64, c.n_rot = 64;
  c.rope_freq_base = 1e6f, c.rms_eps = 1e-6f;
  return c;
}

PresetConfig with_small_hybrid(PresetConfig c) {
  c.n_rot = 16, c.rope_freq_base = 1e7f;
  c.full_attention_interval = 4, c.rope_sections = {4, 4, 4, 0};
  c.ssm_conv_kernel = 4, c.ssm_d_state = 32, c.ssm_n_group = 2, c.ssm_dt_rank = 4, c.ssm_d_inner = 128;
  c.qk_norm = true;
  return c;
}

std::vector<PresetConfig> make_presets() {
  std::vector<PresetConfig> v;
  v.push_back(small_llama());
  PresetConfig qwen2 = small_qwen("qwen2", 3);
  qwen2.qkv_bias = true;
  v.push_back(qwen2);
  PresetConfig qwen3 = small_qwen("qwen3", 3);
  qwen3.qk_norm = true;
  v.push_back(qwen3);
  PresetConfig qwen3moe = qwen3;
  qwen3moe.name = qwen3moe.arch = "qwen3moe";
  qwen3moe.n_expert = 8, qwen3moe.n_expert_used = 2, qwen3moe.n_ff_exp = 256;
  v.push_back(qwen3moe);
  PresetConfig qwen35 = with_small_hybrid(small_qwen("qwen35", 4));
  v.push_back(qwen35);
  PresetConfig qwen35moe = with_small_hybrid(small_qwen("qwen35moe", 4));
  qwen35moe.n_expert = 8, qwen35moe.n_expert_used = 2, qwen35moe.n_ff_exp = 256, qwen35moe.n_ff_shexp = 256;
  v.push_back(qwen35moe);

  // Real sizes (Hugging Face configs of the released models).
  PresetConfig l1b = base("llama32-1b", "llama");  // Llama 3.2 1B: tied head, llama3 rope scaling
  l1b.n_vocab = 128256, l1b.n_ctx_train = 131072, l1b.n_embd = 2048, l1b.n_layer = 16, l1b.n_ff = 8192;
  l1b.n_head = 32, l1b.n_head_kv = 8, l1b.head_dim = 64, l1b.n_rot = 64;
  l1b.rope_freq_base = 500000.0f, l1b.rms_eps = 1e-5f, l1b.tied_output = true, l1b.rope_scaling_factor = 32.0f;
  v.push_back(l1b);
  PresetConfig l8b = base("llama3-8b", "llama");  // Llama 3 8B
  l8b.n_vocab = 128256, l8b.n_ctx_train = 8192, l8b.n_embd = 4096, l8b.n_layer = 32, l8b.n_ff = 14336;
  l8b.n_head = 32, l8b.n_head_kv = 8, l8b.head_dim = 128, l8b.n_rot = 128;
  l8b.rope_freq_base = 500000.0f, l8b.rms_eps = 1e-5f;
  v.push_back(l8b);
  PresetConfig q8b = base("qwen3-8b", "qwen3");  // Qwen3-8B
  q8b.n_vocab = 151936, q8b.n_ctx_train = 40960, q8b.n_embd = 4096, q8b.n_layer = 36, q8b.n_ff = 12288;
  q8b.n_head = 32, q8b.n_head_kv = 8, q8b.head_dim = 128, q8b.n_rot = 128;
  q8b.rope_freq_base = 1e6f, q8b.rms_eps = 1e-6f, q8b.qk_norm = true;
  v.push_back(q8b);
  PresetConfig q30b = base("qwen3-30b-a3b", "qwen3moe");  // Qwen3-30B-A3B
  q30b.n_vocab = 151936, q30b.n_ctx_train = 40960, q30b.n_embd = 2048, q30b.n_layer = 48, q30b.n_ff = 6144;
  q30b.n_head = 32, q30b.n_head_kv = 4, q30b.head_dim = 128, q30b.n_rot = 128;
  q30b.rope_freq_base = 1e6f, q30b.rms_eps = 1e-6f, q30b.qk_norm = true;
  q30b.n_expert = 128, q30b.n_expert_used = 8, q30b.n_ff_exp = 768;
  v.push_back(q30b);
  PresetConfig q35 = base("qwen35-35b-a3b", "qwen35moe");  // Qwen3.5-35B-A3B (without its MTP layer)
  q35.n_vocab = 248320, q35.n_ctx_train = 262144, q35.n_embd = 2048, q35.n_layer = 40, q35.n_ff = 512;
  q35.n_head = 16, q35.n_head_kv = 2, q35.head_dim = 256, q35.n_rot = 64;
  q35.rope_freq_base = 1e7f, q35.rms_eps = 1e-6f, q35.qk_norm = true;
  q35.n_expert = 256, q35.n_expert_used = 8, q35.n_ff_exp = 512, q35.n_ff_shexp = 512;
  q35.full_attention_interval = 4, q35.rope_sections = {11, 11, 10, 0};
  q35.ssm_conv_kernel = 4, q35.ssm_d_state = 128, q35.ssm_n_group = 16, q35.ssm_dt_rank = 32;
  q35.ssm_d_inner = 32 * 128;
  v.push_back(q35);
  return v;
}

const std::vector<PresetConfig>& all() {
  static const std::vector<PresetConfig> kPresets = make_presets();
  return kPresets;
}

void add(std::vector<PresetTensor>& out, std::string name, std::vector<int64_t> ne) {
  out.push_back({std::move(name), std::move(ne)});
}

}  // namespace

std::span<const PresetConfig> presets() { return all(); }

const PresetConfig* find_preset(std::string_view name) {
  for (const auto& p : all())
    if (p.name == name) return &p;
  return nullptr;
}

std::string preset_list() {
  std::string s;
  for (const auto& p : all()) s += (s.empty() ? "" : ", ") + std::string(p.name);
  return s;
}

std::vector<PresetTensor> preset_tensors(const PresetConfig& c) {
  const int64_t E = c.n_embd, V = c.n_vocab, D = c.head_dim;
  std::vector<PresetTensor> t;
  if (c.rope_scaling_factor > 0) add(t, "rope_freqs.weight", {c.n_rot / 2});
  add(t, "token_embd.weight", {E, V});
  add(t, "output_norm.weight", {E});
  if (!c.tied_output) add(t, "output.weight", {E, V});
  const bool hybrid = c.full_attention_interval > 0;
  for (uint32_t il = 0; il < c.n_layer; ++il) {
    const std::string b = "blk." + std::to_string(il) + ".";
    add(t, b + "attn_norm.weight", {E});
    add(t, b + (hybrid ? "post_attention_norm.weight" : "ffn_norm.weight"), {E});
    if (c.is_full_attention(il)) {
      add(t, b + "attn_q.weight", {E, (hybrid ? 2 : 1) * int64_t(c.n_head) * D});  // hybrid: [query, gate] per head
      add(t, b + "attn_k.weight", {E, int64_t(c.n_head_kv) * D});
      add(t, b + "attn_v.weight", {E, int64_t(c.n_head_kv) * D});
      if (c.qkv_bias) {
        add(t, b + "attn_q.bias", {int64_t(c.n_head) * D});
        add(t, b + "attn_k.bias", {int64_t(c.n_head_kv) * D});
        add(t, b + "attn_v.bias", {int64_t(c.n_head_kv) * D});
      }
      if (c.qk_norm) {
        add(t, b + "attn_q_norm.weight", {D});
        add(t, b + "attn_k_norm.weight", {D});
      }
      add(t, b + "attn_output.weight", {int64_t(c.n_head) * D, E});
    } else {
      const int64_t key_dim = int64_t(c.ssm_n_group) * c.ssm_d_state, value_dim = c.ssm_d_inner;
      const int64_t H_v = c.ssm_dt_rank;
      add(t, b + "attn_qkv.weight", {E, 2 * key_dim + value_dim});
      add(t, b + "attn_gate.weight", {E, value_dim});
      add(t, b + "ssm_conv1d.weight", {c.ssm_conv_kernel, 2 * key_dim + value_dim});
      add(t, b + "ssm_dt.bias", {H_v});
      add(t, b + "ssm_a", {H_v});
      add(t, b + "ssm_beta.weight", {E, H_v});
      add(t, b + "ssm_alpha.weight", {E, H_v});
      add(t, b + "ssm_norm.weight", {value_dim / H_v});
      add(t, b + "ssm_out.weight", {value_dim, E});
    }
    if (c.n_expert > 0) {
      add(t, b + "ffn_gate_inp.weight", {E, c.n_expert});
      add(t, b + "ffn_gate_exps.weight", {E, c.n_ff_exp, c.n_expert});
      add(t, b + "ffn_up_exps.weight", {E, c.n_ff_exp, c.n_expert});
      add(t, b + "ffn_down_exps.weight", {c.n_ff_exp, E, c.n_expert});
      if (c.n_ff_shexp > 0) {
        add(t, b + "ffn_gate_inp_shexp.weight", {E});
        add(t, b + "ffn_gate_shexp.weight", {E, c.n_ff_shexp});
        add(t, b + "ffn_up_shexp.weight", {E, c.n_ff_shexp});
        add(t, b + "ffn_down_shexp.weight", {c.n_ff_shexp, E});
      }
    } else {
      add(t, b + "ffn_gate.weight", {E, c.n_ff});
      add(t, b + "ffn_up.weight", {E, c.n_ff});
      add(t, b + "ffn_down.weight", {c.n_ff, E});
    }
  }
  return t;
}

Metadata preset_hparams(const PresetConfig& c, const std::string& model_name) {
  using gguf::Value;
  const std::string a = std::string(c.arch) + ".";
  Metadata m;
  m.emplace_back("general.architecture", Value::string(std::string(c.arch)));
  m.emplace_back("general.name", Value::string(model_name));
  m.emplace_back(a + "context_length", Value::u32(c.n_ctx_train));
  m.emplace_back(a + "embedding_length", Value::u32(c.n_embd));
  m.emplace_back(a + "block_count", Value::u32(c.n_layer));
  m.emplace_back(a + "feed_forward_length", Value::u32(c.n_ff));
  m.emplace_back(a + "attention.head_count", Value::u32(c.n_head));
  m.emplace_back(a + "attention.head_count_kv", Value::u32(c.n_head_kv));
  m.emplace_back(a + "attention.key_length", Value::u32(c.head_dim));
  m.emplace_back(a + "attention.value_length", Value::u32(c.head_dim));
  m.emplace_back(a + "rope.freq_base", Value::f32(c.rope_freq_base));
  m.emplace_back(a + "attention.layer_norm_rms_epsilon", Value::f32(c.rms_eps));
  m.emplace_back(a + "rope.dimension_count", Value::u32(c.n_rot));
  m.emplace_back(a + "vocab_size", Value::u32(c.n_vocab));
  if (c.n_expert > 0) {
    m.emplace_back(a + "expert_count", Value::u32(c.n_expert));
    m.emplace_back(a + "expert_used_count", Value::u32(c.n_expert_used));
    m.emplace_back(a + "expert_feed_forward_length", Value::u32(c.n_ff_exp));
    if (c.n_ff_shexp > 0) m.emplace_back(a + "expert_shared_feed_forward_length", Value::u32(c.n_ff_shexp));
  }
  if (c.full_attention_interval > 0) {
    m.emplace_back(a + "full_attention_interval", Value::u32(c.full_attention_interval));
    m.emplace_back(a + "rope.dimension_sections",
                   Value::i32_array({c.rope_sections[0], c.rope_sections[1], c.rope_sections[2], c.rope_sections[3]}));
    m.emplace_back(a + "ssm.conv_kernel", Value::u32(c.ssm_conv_kernel));
    m.emplace_back(a + "ssm.state_size", Value::u32(c.ssm_d_state));
    m.emplace_back(a + "ssm.group_count", Value::u32(c.ssm_n_group));
    m.emplace_back(a + "ssm.time_step_rank", Value::u32(c.ssm_dt_rank));
    m.emplace_back(a + "ssm.inner_size", Value::u32(c.ssm_d_inner));
  }
  return m;
}

Metadata synthetic_vocab(uint32_t n_vocab) {
  using gguf::Value;
  std::vector<std::string> tokens = {"<unk>", "<s>", "</s>"};
  std::vector<int32_t> types = {2, 3, 3};  // UNKNOWN, CONTROL, CONTROL
  tokens.reserve(n_vocab);
  for (int b = 0; b < 256 && tokens.size() < n_vocab; ++b) {
    char buf[8];
    std::snprintf(buf, sizeof buf, "<0x%02X>", b);
    tokens.push_back(buf);
    types.push_back(6);  // BYTE
  }
  // Lower-case words by length, each bare and with the SentencePiece space marker; every
  // piece's prefixes come first, so SPM merges can reach all of them.
  std::string word = "a";
  while (tokens.size() < n_vocab) {
    for (const std::string& piece : {"\xe2\x96\x81" + word, word}) {
      if (tokens.size() == n_vocab) break;
      tokens.push_back(piece);
      types.push_back(1);  // NORMAL
    }
    int i = int(word.size()) - 1;  // next word: base-26 increment, growing when all are 'z'
    while (i >= 0 && word[size_t(i)] == 'z') word[size_t(i--)] = 'a';
    if (i < 0) word.insert(word.begin(), 'a');
    else ++word[size_t(i)];
  }
  tokens.resize(n_vocab);
  types.resize(n_vocab);
  std::vector<float> scores(n_vocab, 0.0f);
  for (uint32_t i = 259; i < n_vocab; ++i) scores[i] = -float(i - 259);
  Metadata m;
  m.emplace_back("tokenizer.ggml.tokens", Value::string_array(tokens));
  m.emplace_back("tokenizer.ggml.scores", Value::f32_array(scores));
  m.emplace_back("tokenizer.ggml.token_type", Value::i32_array(types));
  m.emplace_back("tokenizer.ggml.model", Value::string("llama"));
  m.emplace_back("tokenizer.ggml.unknown_token_id", Value::u32(0));
  m.emplace_back("tokenizer.ggml.bos_token_id", Value::u32(1));
  m.emplace_back("tokenizer.ggml.eos_token_id", Value::u32(2));
  m.emplace_back("tokenizer.ggml.seperator_token_id", Value::u32(0xFFFFFFFFu));
  m.emplace_back("tokenizer.ggml.padding_token_id", Value::u32(0xFFFFFFFFu));
  return m;
}

}  // namespace zinc::model
