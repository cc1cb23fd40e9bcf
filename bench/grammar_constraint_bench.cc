// A GBNF grammar's cost a generated token: GrammarConstraint::mask over the Qwen3 vocabulary (151k)
// once its tables are warm, in the states an answer spends its tokens in, and the first mask of
// a request (tables built from nothing). Data folder: ZINC_TEST_DATA, else ../shared next to the
// source tree.
#include <benchmark/benchmark.h>

#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "engine/grammar_constraint.h"
#include "gguf/file.h"
#include "tokenizer/tokenizer.h"

namespace {

using zinc::engine::Grammar;
using zinc::engine::GrammarConstraint;

std::shared_ptr<const zinc::engine::TokenVocab> qwen3_vocab() {
  const char* env = std::getenv("ZINC_TEST_DATA");
  const std::string dir = env && *env ? env : (std::filesystem::path(__FILE__).parent_path() / ".." / ".." / "shared").lexically_normal().string();
  auto file = zinc::gguf::open_file(dir + "/vocab/ggml-vocab-qwen3.gguf");
  if (!file.ok()) return nullptr;
  auto tok = zinc::tokenizer::Tokenizer::load(**file);
  if (!tok.ok()) return nullptr;
  return zinc::engine::TokenVocab::of(**tok);
}

// llama.cpp's JSON grammar, as its grammars/json.gbnf writes it.
constexpr const char* kJson = R"(root   ::= object
value  ::= object | array | string | number | ("true" | "false" | "null") ws
object ::= "{" ws ( string ":" ws value ("," ws string ":" ws value)* )? "}" ws
array  ::= "[" ws ( value ("," ws value)* )? "]" ws
string ::= "\"" ( [^"\\\x7F\x00-\x1F] | "\\" (["\\bfnrt] | "u" [0-9a-fA-F]{4}) )* "\"" ws
number ::= ("-"? ([0-9] | [1-9] [0-9]{0,15})) ("." [0-9]+)? ([eE] [-+]? [0-9] [1-9]{0,15})? ws
ws ::= | " " | "\n" [ \t]{0,20}
)";
constexpr const char* kLine = "root ::= [^\\n]* \"\\n\"\n";

std::shared_ptr<GrammarConstraint> constraint_after(const std::shared_ptr<const zinc::engine::TokenVocab>& v, const char* grammar,
                                                    const std::string& prefix) {
  auto g = Grammar::compile(grammar);
  if (!g.ok()) return nullptr;
  auto c = GrammarConstraint::make(v, *g, {});
  for (char ch : prefix)
    for (size_t id = 0; id < v->texts.size(); ++id)
      if (v->texts[id] == std::string(1, ch)) {
        c->accept(int32_t(id));
        break;
      }
  return c;
}

void BM_GrammarMask(benchmark::State& state, const char* grammar, const char* prefix) {
  auto v = qwen3_vocab();
  if (!v) return state.SkipWithError("vocabulary not found (ZINC_TEST_DATA)");
  auto c = constraint_after(v, grammar, prefix);
  if (!c) return state.SkipWithError("grammar does not compile");
  std::vector<float> logits(v->texts.size(), 0.0f);
  for (auto _ : state) {
    std::fill(logits.begin(), logits.end(), 0.0f);
    c->mask(logits);
    benchmark::DoNotOptimize(logits.data());
  }
}

void BM_GrammarFirstMask(benchmark::State& state, const char* grammar) {
  auto v = qwen3_vocab();
  if (!v) return state.SkipWithError("vocabulary not found (ZINC_TEST_DATA)");
  std::vector<float> logits(v->texts.size(), 0.0f);
  for (auto _ : state) {
    auto c = constraint_after(v, grammar, "");
    c->mask(logits);
    benchmark::DoNotOptimize(logits.data());
  }
}

BENCHMARK_CAPTURE(BM_GrammarMask, json_start, kJson, "")->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_GrammarMask, json_key, kJson, "{")->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_GrammarMask, json_string, kJson, "{\"a\": \"")->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_GrammarMask, json_number, kJson, "{\"a\": 1")->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_GrammarMask, line, kLine, "ab")->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_GrammarFirstMask, json, kJson)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_GrammarFirstMask, line, kLine)->Unit(benchmark::kMillisecond);

}  // namespace
