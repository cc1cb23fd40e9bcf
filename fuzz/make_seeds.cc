// Writes the fuzzing seed corpus: a few small valid GGUF files made with gguf::Writer that
// cover every value type, arrays, custom alignment and the common tensor types.
// Usage: make_fuzz_seeds OUT_DIR (the committed copy lives in fuzz/corpus/gguf).
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "core/tensor_type.h"
#include "gguf/writer.h"

namespace {

using zinc::Status;
using zinc::TensorType;
using zinc::gguf::Value;
using zinc::gguf::ValueType;
using zinc::gguf::Writer;

// Deterministic non-zero bytes.
Writer::Fill pattern(uint32_t seed) {
  return [seed](std::span<uint8_t> out) {
    uint32_t x = seed * 2654435761u + 1;
    for (auto& b : out) {
      x = x * 1664525u + 1013904223u;
      b = uint8_t(x >> 24);
    }
    return Status();
  };
}

// Finite float32 values (so float tensors dequantize to numbers).
Writer::Fill floats(uint32_t seed) {
  return [seed](std::span<uint8_t> out) {
    uint32_t x = seed + 7;
    for (size_t i = 0; i + 4 <= out.size(); i += 4) {
      x = x * 1664525u + 1013904223u;
      float v = float(int32_t(x >> 8) % 2000) / 1000.0f;
      std::memcpy(out.data() + i, &v, 4);
    }
    return Status();
  };
}

int check(const Status& s) {
  if (s.ok()) return 0;
  std::fprintf(stderr, "error: %s\n", s.message().c_str());
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: make_fuzz_seeds OUT_DIR\n");
    return 2;
  }
  const std::string dir = argv[1];
  int failed = 0;

  {  // Metadata only.
    Writer w;
    w.set("general.architecture", Value::string("llama"));
    failed |= check(w.write(dir + "/metadata-only.gguf"));
  }
  {  // Every value type, scalar and array.
    Writer w;
    w.set("t.u8", Value::u8(200));
    w.set("t.i8", Value::i8(-100));
    w.set("t.u16", Value::u16(60000));
    w.set("t.i16", Value::i16(-30000));
    w.set("t.u32", Value::u32(4000000000u));
    w.set("t.i32", Value::i32(-2000000000));
    w.set("t.f32", Value::f32(1.5f));
    w.set("t.bool", Value::boolean(true));
    w.set("t.str", Value::string("hello"));
    w.set("t.u64", Value::u64(1ull << 40));
    w.set("t.i64", Value::i64(-(1ll << 40)));
    w.set("t.f64", Value::f64(-2.25));
    w.set("t.strings", Value::string_array({"a", "", "bc", "\xe2\x96\x81x"}));
    w.set("t.f32s", Value::f32_array({1.0f, -2.0f, 0.5f}));
    w.set("t.i32s", Value::i32_array({1, -2, 3}));
    w.set("t.u32s", Value::u32_array({7, 8}));
    w.set("t.bools", Value::array(ValueType::BOOL, {Value::boolean(true), Value::boolean(false)}));
    w.set("t.u8s", Value::array(ValueType::UINT8, {Value::u8(1), Value::u8(2), Value::u8(3)}));
    w.set("t.f64s", Value::array(ValueType::FLOAT64, {Value::f64(1.0), Value::f64(-1.0)}));
    w.set("t.empty", Value::array(ValueType::UINT32, {}));
    failed |= check(w.write(dir + "/all-value-types.gguf"));
  }
  {  // Tensors of several types and ranks, default alignment.
    Writer w;
    w.set("general.architecture", Value::string("llama"));
    failed |= check(w.add_tensor("f32.weight", TensorType::F32, {8, 3}, floats(1)));
    failed |= check(w.add_tensor("f16.weight", TensorType::F16, {16, 2}, pattern(2)));
    failed |= check(w.add_tensor("bf16.weight", TensorType::BF16, {16}, pattern(3)));
    failed |= check(w.add_tensor("q4_0.weight", TensorType::Q4_0, {32, 2}, pattern(4)));
    failed |= check(w.add_tensor("q8_0.weight", TensorType::Q8_0, {64, 1, 2}, pattern(5)));
    failed |= check(w.add_tensor("q4_k.weight", TensorType::Q4_K, {256, 1}, pattern(6)));
    failed |= check(w.add_tensor("q6_k.weight", TensorType::Q6_K, {256, 1, 1, 1}, pattern(7)));
    failed |= check(w.add_tensor("empty.weight", TensorType::F32, {0, 4}, pattern(8)));
    failed |= check(w.write(dir + "/tensors.gguf"));
  }
  {  // Custom alignment.
    Writer w(64);
    w.set("general.alignment", Value::u32(64));
    failed |= check(w.add_tensor("a", TensorType::F32, {5}, floats(9)));
    failed |= check(w.add_tensor("b", TensorType::F16, {3, 3}, pattern(10)));
    failed |= check(w.write(dir + "/alignment-64.gguf"));
  }
  {  // A tiny llama-shaped model with a vocabulary.
    Writer w;
    w.set("general.architecture", Value::string("llama"));
    w.set("general.name", Value::string("seed"));
    w.set("llama.block_count", Value::u32(1));
    w.set("llama.embedding_length", Value::u32(32));
    w.set("llama.attention.head_count", Value::u32(2));
    w.set("llama.attention.layer_norm_rms_epsilon", Value::f32(1e-5f));
    w.set("tokenizer.ggml.model", Value::string("llama"));
    w.set("tokenizer.ggml.tokens", Value::string_array({"<unk>", "<s>", "</s>", "a", "b", "\xe2\x96\x81"}));
    w.set("tokenizer.ggml.scores", Value::f32_array({0, 0, 0, -1, -2, -3}));
    w.set("tokenizer.ggml.token_type", Value::i32_array({2, 3, 3, 1, 1, 1}));
    w.set("tokenizer.ggml.bos_token_id", Value::u32(1));
    failed |= check(w.add_tensor("token_embd.weight", TensorType::Q8_0, {32, 6}, pattern(11)));
    failed |= check(w.add_tensor("output_norm.weight", TensorType::F32, {32}, floats(12)));
    failed |= check(w.add_tensor("blk.0.attn_q.weight", TensorType::Q4_0, {32, 32}, pattern(13)));
    failed |= check(w.write(dir + "/tiny-model.gguf"));
  }
  return failed;
}
