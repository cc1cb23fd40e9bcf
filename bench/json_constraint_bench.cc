// JSON mode's and structured outputs' cost a generated token: JsonConstraint::mask and
// SchemaConstraint::mask over the Qwen3 (151k) and Llama 3 (128k) vocabularies, in the states an
// answer spends its tokens in (expecting a key or value, inside a string, after a number). Data folder: ZINC_TEST_DATA, else ../shared next to the source tree.
#include <benchmark/benchmark.h>

#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "engine/json_constraint.h"
#include "engine/json_schema.h"
#include "gguf/file.h"
#include "tokenizer/tokenizer.h"

namespace {

std::string data_dir() {
  const char* env = std::getenv("ZINC_TEST_DATA");
  if (env && *env) return env;
  return (std::filesystem::path(__FILE__).parent_path() / ".." / ".." / "shared").lexically_normal().string();
}

std::shared_ptr<const zinc::engine::TokenVocab> vocab_of(const std::string& vocab) {
  auto file = zinc::gguf::open_file(data_dir() + "/vocab/" + vocab);
  if (!file.ok()) return nullptr;
  auto tok = zinc::tokenizer::Tokenizer::load(**file);
  if (!tok.ok()) return nullptr;
  return zinc::engine::TokenVocab::of(**tok);
}

void BM_Mask(benchmark::State& state, const char* vocab, const char* prefix) {
  auto v = vocab_of(vocab);
  if (!v) {
    state.SkipWithError("vocabulary not found (ZINC_TEST_DATA)");
    return;
  }
  zinc::engine::JsonConstraint c(v, zinc::engine::JsonPrefix(), {});
  const std::vector<std::string>* texts = &v->texts;
  // Reach the state by accepting the prefix one byte-token at a time.
  for (char ch : std::string(prefix)) {
    for (size_t id = 0; id < texts->size(); ++id)
      if ((*texts)[id] == std::string(1, ch)) {
        c.accept(int32_t(id));
        break;
      }
  }
  std::vector<float> logits(texts->size(), 0.0f);
  for (auto _ : state) {
    std::fill(logits.begin(), logits.end(), 0.0f);
    c.mask(logits);
    benchmark::DoNotOptimize(logits.data());
  }
  state.counters["tokens"] = double(texts->size());
}

// The same for a schema (structured outputs): an object of a string, an integer and an enum array.
void BM_SchemaMask(benchmark::State& state, const char* prefix) {
  auto v = vocab_of("ggml-vocab-qwen3.gguf");
  if (!v) {
    state.SkipWithError("vocabulary not found (ZINC_TEST_DATA)");
    return;
  }
  auto schema = zinc::engine::JsonSchema::compile(nlohmann::ordered_json::parse(
      R"({"type": "object", "properties": {"name": {"type": "string"}, "age": {"type": "integer"},
          "tags": {"type": "array", "items": {"enum": ["red", "green", "blue"]}}}, "required": ["name", "age", "tags"]})"));
  if (!schema.ok()) {
    state.SkipWithError(schema.status().message().c_str());
    return;
  }
  zinc::engine::SchemaConstraint c(v, zinc::engine::SchemaPrefix(schema->get()), {}, *schema);
  for (char ch : std::string(prefix))
    for (size_t id = 0; id < v->texts.size(); ++id)
      if (v->texts[id] == std::string(1, ch)) {
        c.accept(int32_t(id));
        break;
      }
  std::vector<float> logits(v->texts.size(), 0.0f);
  for (auto _ : state) {
    std::fill(logits.begin(), logits.end(), 0.0f);
    c.mask(logits);
    benchmark::DoNotOptimize(logits.data());
  }
}

BENCHMARK_CAPTURE(BM_SchemaMask, key, "{")->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_SchemaMask, string, "{\"name\":\"")->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_SchemaMask, integer, "{\"name\":\"x\",\"age\":1")->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_SchemaMask, enum_item, "{\"name\":\"x\",\"age\":1,\"tags\":[")->Unit(benchmark::kMillisecond);

BENCHMARK_CAPTURE(BM_Mask, qwen3_start, "ggml-vocab-qwen3.gguf", "")->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Mask, qwen3_value, "ggml-vocab-qwen3.gguf", "{\"a\":")->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Mask, qwen3_string, "ggml-vocab-qwen3.gguf", "{\"a\":\"")->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Mask, qwen3_number, "ggml-vocab-qwen3.gguf", "{\"a\":1")->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Mask, llama3_string, "ggml-vocab-llama3.gguf", "{\"a\":\"")->Unit(benchmark::kMillisecond);

}  // namespace
