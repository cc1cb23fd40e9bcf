// Rendering speed of real chat templates over a long conversation (100 messages of ~300 bytes).
// Templates come from shared/templates (ZINC_TEST_DATA, default ../shared beside the checkout).
#include <benchmark/benchmark.h>

#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "chat/template.h"

namespace {

using nlohmann::ordered_json;

std::string shared_dir() {
  if (const char* env = std::getenv("ZINC_TEST_DATA"); env && *env) return env;
  std::string here = __FILE__;  // <checkout>/bench/chat_template_bench.cc
  return here.substr(0, here.rfind("/bench/")) + "/../shared";
}

std::string read_template(const std::string& name) {
  std::ifstream in(shared_dir() + "/templates/sources/" + name + ".jinja");
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

ordered_json conversation(int n_messages) {
  ordered_json messages = ordered_json::array();
  messages.push_back({{"role", "system"}, {"content", "You are a helpful assistant. Answer briefly."}});
  std::string filler;
  for (int i = 0; i < 6; ++i) filler += "Some text with Ünïcode, \"quotes\" and numbers 12345. ";
  for (int i = 1; i < n_messages; ++i) {
    if (i % 2) messages.push_back({{"role", "user"}, {"content", "Question " + std::to_string(i) + ": " + filler}});
    else messages.push_back({{"role", "assistant"}, {"content", "<think>\nReasoning.\n</think>\n\nAnswer: " + filler}});
  }
  return {{"messages", messages}, {"add_generation_prompt", true}, {"bos_token", "<s>"}, {"eos_token", "</s>"}};
}

void BM_Render(benchmark::State& state, const char* name) {
  const std::string source = read_template(name);
  auto t = zinc::chat::Template::parse(source);
  if (source.empty() || !t.ok()) {
    state.SkipWithError(source.empty() ? "shared/templates missing (set ZINC_TEST_DATA)" : t.status().message().c_str());
    return;
  }
  const int n = int(state.range(0));
  const ordered_json ctx = conversation(n);
  zinc::chat::RenderOptions options;
  options.now = zinc::chat::parse_local_time("2026-01-15T09:30:00").value();
  size_t bytes = 0;
  for (auto _ : state) {
    auto out = t->render(ctx, options);
    if (!out.ok()) {
      state.SkipWithError(out.status().message().c_str());
      return;
    }
    bytes = out->size();
    benchmark::DoNotOptimize(out->data());
  }
  state.counters["messages_per_s"] = benchmark::Counter(double(n), benchmark::Counter::kIsIterationInvariantRate);
  state.counters["output_bytes"] = double(bytes);
}

void BM_Parse(benchmark::State& state, const char* name) {
  const std::string source = read_template(name);
  for (auto _ : state) {
    auto t = zinc::chat::Template::parse(source);
    benchmark::DoNotOptimize(t.ok());
  }
  state.counters["source_bytes"] = double(source.size());
}

BENCHMARK_CAPTURE(BM_Render, qwen3, "Qwen-Qwen3-0.6B")->Arg(10)->Arg(100)->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_Render, llama31, "meta-llama-Llama-3.1-8B-Instruct")->Arg(100)->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_Render, gpt_oss, "openai-gpt-oss-120b")->Arg(100)->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_Render, gemma4, "google-gemma-4-31B-it")->Arg(10)->Arg(100)->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_Parse, gemma4, "google-gemma-4-31B-it")->Unit(benchmark::kMicrosecond);

}  // namespace
