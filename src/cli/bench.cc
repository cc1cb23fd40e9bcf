// zinc bench -m MODEL [-p 512[,N...]] [-n 128[,N...]] [-d DEPTH[,D...]] [-c CTX] [-r 3] [-t THREADS] [-o md|json]
// [--backend auto|cpu|vulkan] [--device N] [--profile]: prefill (pp) and decode (tg) throughput
// like llama-bench: tokens per second, mean and standard deviation over repetitions after one
// warm-up run, and for decode the effective weight bandwidth (weight bytes one token reads x
// tokens/s: routed experts count only the k used, the embedding table one row). Decode is a
// greedy chain from a random token (Runner::decode_greedy_chain: on Vulkan each step's argmax
// feeds the next on the device and the next step is queued before this one is read back, as
// `zinc run --temp 0` generates); on Vulkan also the GPU time of a decode step. The KV cache holds
// what the tests need (depth + max(-p, -n) + 1 tokens, as llama-bench sizes it; of the largest
// values where comma lists give several, each depth running every -p and -n test) unless -c asks
// for more, such as the 4096 tokens `zinc run` and `zinc serve` hold by default.
// --profile (Vulkan): GPU time per op kind and per matrix product of one prefill chunk of -p tokens
// and of one decode step, at the (first) depth (a barrier after every op), then the decode step as
// it runs: GPU time per stage (the ops between two of its barriers, which run together).
#include <algorithm>
#include <chrono>
#include <map>
#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <vector>

#include "cli/command.h"
#include "cli/model_flags.h"
#include "engine/runner.h"
#include "model/model.h"

namespace zinc::cli {
namespace {

struct BenchOptions {
  std::string model, output = "md", backend = "auto";
  hub::ModelSource source;  // -m and the flags that fetch a model; resolved into `model`
  std::vector<int> prompts{512}, gens{128}, depths{0};  // llama-bench's comma lists: every depth, each of -p and -n
  int reps = 3, threads = 0, device = -1;
  int64_t ctx = 0;  // KV cache tokens; 0: what the tests need
  bool profile = false;
};

struct Result1 {
  std::string test;
  double avg_ts = 0, stddev_ts = 0;
  bool decode = false;
  double gpu_ms_per_token = 0;  // Vulkan decode: GPU time of a step, from the step's timestamps
};

// Seconds for one run: prefill `depth` tokens untimed, then `n` tokens as one prefill or as n steps
// (their GPU time added to *gpu_ns).
Result<double> time_run(engine::Runner& r, const std::vector<int32_t>& tokens, int depth, int n, bool decode,
                        double* gpu_ns) {
  kv::Cache& cache = r.cache();
  const kv::SeqId seq = 0;
  cache.clear(seq);
  if (depth > 0) {
    ZINC_ASSIGN_OR_RETURN(auto ignored, r.decode(seq, std::span<const int32_t>(tokens).first(size_t(depth)), false));
    (void)ignored;
  }
  const auto rest = std::span<const int32_t>(tokens).subspan(size_t(depth), size_t(n));
  const auto t0 = std::chrono::steady_clock::now();
  if (decode) {
    ZINC_ASSIGN_OR_RETURN(int steps, r.decode_greedy_chain(seq, rest[0], n, nullptr, gpu_ns));
    if (steps != n) return error("%d of %d decode steps ran", steps, n);
  } else {
    ZINC_ASSIGN_OR_RETURN(auto ignored, r.decode(seq, rest, false));
    (void)ignored;
  }
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

Result<Result1> measure(engine::Runner& r, const std::vector<int32_t>& tokens, const BenchOptions& o, int depth, int n, bool decode) {
  Result1 res;
  res.decode = decode;
  res.test = (decode ? "tg" : "pp") + std::to_string(n) + (depth > 0 ? "@d" + std::to_string(depth) : "");
  double gpu_ns = 0;
  ZINC_ASSIGN_OR_RETURN(double warm, time_run(r, tokens, depth, n, decode, &gpu_ns));
  (void)warm;
  gpu_ns = 0;
  std::vector<double> ts;
  for (int i = 0; i < o.reps; ++i) {
    ZINC_ASSIGN_OR_RETURN(double s, time_run(r, tokens, depth, n, decode, &gpu_ns));
    ts.push_back(double(n) / s);
  }
  res.gpu_ms_per_token = gpu_ns / 1e6 / double(n * o.reps);
  for (double x : ts) res.avg_ts += x / double(ts.size());
  for (double x : ts) res.stddev_ts += (x - res.avg_ts) * (x - res.avg_ts);
  res.stddev_ts = ts.size() > 1 ? std::sqrt(res.stddev_ts / double(ts.size() - 1)) : 0.0;
  return res;
}

struct ProfileRow {
  int calls = 0;
  double ns = 0;
};

// Rows sorted by time, as a markdown table.
void print_rows(const char* what, const std::map<std::string, ProfileRow>& rows, double total_ns) {
  std::vector<std::pair<std::string, ProfileRow>> sorted(rows.begin(), rows.end());
  std::sort(sorted.begin(), sorted.end(), [](const auto& a, const auto& b) { return a.second.ns > b.second.ns; });
  std::printf("| %s | calls | total us | %% of step |\n| --- | ---: | ---: | ---: |\n", what);
  for (const auto& [key, row] : sorted)
    std::printf("| %s | %d | %.1f | %.1f |\n", key.c_str(), row.calls, row.ns / 1e3, 100.0 * row.ns / total_ns);
  std::printf("\n");
}

// "blk.12.ffn_gate" -> "ffn_gate": one row per weight of all layers.
std::string without_layer(const std::string& name) {
  if (name.rfind("blk.", 0) != 0) return name;
  const size_t dot = name.find('.', 4);
  return dot == std::string::npos ? name : name.substr(dot + 1);
}

// "blk.3.attn_q+blk.3.attn_k" -> "attn_q+attn_k": one row per stage of all layers.
std::string stage_without_layers(const std::string& ops) {
  std::string out;
  for (size_t begin = 0; begin <= ops.size();) {
    size_t end = ops.find('+', begin);
    if (end == std::string::npos) end = ops.size();
    out += (out.empty() ? "" : "+") + without_layer(ops.substr(begin, end - begin));
    begin = end + 1;
  }
  return out;
}

// Timings of one profiled step of `tokens` at `depth` (run twice: the first records).
Result<std::vector<vulkan::OpTiming>> profile_timings(engine::Runner& r, const std::vector<int32_t>& tokens, int depth,
                                                      int n, vulkan::Executor::ProfileMode mode) {
  std::vector<vulkan::OpTiming> timings;
  for (int i = 0; i < 2; ++i) {
    r.cache().clear(0);
    if (depth > 0) ZINC_RETURN_IF_ERROR(r.decode(0, std::span<const int32_t>(tokens).first(size_t(depth)), false).status());
    ZINC_ASSIGN_OR_RETURN(timings, r.profile_step(0, std::span<const int32_t>(tokens).subspan(size_t(depth), size_t(n)), mode));
  }
  return timings;
}

// The decode step's stages as they run (its own barriers, a timestamp after each).
int print_stage_profile(engine::Runner& r, const std::vector<int32_t>& tokens, int depth) {
  auto t = profile_timings(r, tokens, depth, 1, vulkan::Executor::ProfileMode::kStages);
  if (!t.ok()) return fail(t.status().message());
  std::map<std::string, ProfileRow> stages;
  double total = 0;
  for (const auto& s : *t) {
    stages[stage_without_layers(s.name)].calls++;
    stages[stage_without_layers(s.name)].ns += s.ns;
    total += s.ns;
  }
  std::printf("decode step at depth %d as it runs: %zu stages, %.1f us of GPU time\n\n", depth, t->size(), total / 1e3);
  print_rows("stage", stages, total);
  return 0;
}

// One step of `tokens` at `depth` with a timestamp after every op: GPU time per op kind and per
// matrix product.
int print_profile_step(engine::Runner& r, const std::vector<int32_t>& tokens, int depth, int n) {
  auto t = profile_timings(r, tokens, depth, n, vulkan::Executor::ProfileMode::kOps);
  if (!t.ok()) return fail(t.status().message());
  const std::vector<vulkan::OpTiming>& timings = *t;
  std::map<std::string, ProfileRow> kinds, matmuls;
  double total = 0;
  for (const auto& t : timings) {
    kinds[t.kind].calls++;
    kinds[t.kind].ns += t.ns;
    if (t.kind.find("matmul") != std::string::npos) {
      matmuls[without_layer(t.name)].calls++;
      matmuls[without_layer(t.name)].ns += t.ns;
    }
    total += t.ns;
  }
  if (n == 1)
    std::printf("decode step at depth %d on %s: %.1f us of GPU time (a barrier after every op)\n\n", depth,
                r.device_name().c_str(), total / 1e3);
  else
    std::printf("prefill step of %d tokens at depth %d on %s: %.1f us of GPU time, %.0f tok/s"
                " (a barrier after every op)\n\n",
                n, depth, r.device_name().c_str(), total / 1e3, n / (total * 1e-9));
  print_rows("op", kinds, total);
  if (!matmuls.empty()) print_rows("matrix product", matmuls, total);
  return 0;
}

// One prefill chunk of -p tokens (at most the runner's batch) and one decode step, at `depth`.
int print_profile(engine::Runner& r, const std::vector<int32_t>& tokens, int depth, int prompt) {
  if (!r.on_vulkan()) return fail("--profile needs the Vulkan backend");
  if (tokens.size() <= size_t(depth)) return fail("--profile needs -p or -n tokens to run");
  const int chunk = int(std::min<int64_t>(prompt, r.options().max_batch));
  if (chunk > 1)
    if (int s = print_profile_step(r, tokens, depth, chunk); s != 0) return s;
  if (int s = print_profile_step(r, tokens, depth, 1); s != 0) return s;
  return print_stage_profile(r, tokens, depth);
}

int run_bench(const BenchOptions& o) {
  auto least = [](const std::vector<int>& v) { return v.empty() ? -1 : *std::min_element(v.begin(), v.end()); };
  auto most = [](const std::vector<int>& v) { return *std::max_element(v.begin(), v.end()); };
  if (least(o.prompts) < 0 || least(o.gens) < 0 || least(o.depths) < 0 || o.ctx < 0 || o.reps < 1)
    return fail("-p, -n, -d and -c must be >= 0 and -r >= 1");
  const int max_depth = most(o.depths), max_run = std::max(most(o.prompts), most(o.gens));
  const int64_t need = int64_t(max_depth) + max_run + 1;
  if (o.ctx > 0 && o.ctx < need)
    return fail("-c " + std::to_string(o.ctx) + ": the tests need " + std::to_string(need) +
                " tokens of cache (the largest -d + the largest of -p and -n + 1)");
  if (o.output != "md" && o.output != "json") return fail("-o: expected md or json, got '" + o.output + "'");
  auto backend = engine::parse_backend(o.backend);
  if (!backend.ok()) return fail(backend.status().message());
  auto model = model::Model::load(o.model);
  if (!model.ok()) return fail(model.status().message());
  engine::RunnerOptions ro;
  ro.backend = *backend;
  ro.device = o.device;
  ro.n_threads = o.threads;
  ro.n_ctx = o.ctx > 0 ? o.ctx : need;
  auto runner = engine::Runner::create(**model, ro);
  if (!runner.ok()) return fail(runner.status().message());
  if (auto s = (*runner)->cache().add_sequence(); !s.ok()) return fail(s.status().message());

  std::mt19937 rng(1);
  std::vector<int32_t> tokens(size_t(max_depth + max_run));
  for (auto& t : tokens) t = int32_t(rng() % (*model)->hparams().n_vocab);

  std::vector<Result1> results;
  for (int depth : o.depths) {
    std::vector<std::pair<int, bool>> tests;
    for (int n : o.prompts) tests.emplace_back(n, false);
    for (int n : o.gens) tests.emplace_back(n, true);
    for (auto [n, decode] : tests) {
      if (n == 0) continue;
      auto r = measure(**runner, tokens, o, depth, n, decode);
      if (!r.ok()) return fail(r.status().message());
      results.push_back(*r);
    }
  }

  if (o.profile) {  // of the first depth and prompt size
    if (int s = print_profile(**runner, tokens, o.depths[0], o.prompts[0]); s != 0) return s;
  }

  const double size_bytes = double((*model)->weight_bytes());
  const double token_bytes = double((*model)->decode_bytes());
  const std::string name = (*model)->hparams().arch;
  const int threads = (*runner)->pool().size();
  if (o.output == "json") {
    nlohmann::ordered_json out = nlohmann::ordered_json::array();
    for (const auto& r : results) {
      nlohmann::ordered_json j;
      j["model"] = name;
      j["model_size"] = uint64_t(size_bytes);
      j["backend"] = (*runner)->backend_name();
      j["n_threads"] = threads;
      j["n_ctx"] = ro.n_ctx;
      j["test"] = r.test;
      j["avg_ts"] = r.avg_ts;
      j["stddev_ts"] = r.stddev_ts;
      if (r.decode) j["bandwidth_gbs"] = token_bytes * r.avg_ts / 1e9;
      if (r.gpu_ms_per_token > 0) j["gpu_ms_per_token"] = r.gpu_ms_per_token;
      out.push_back(j);
    }
    std::printf("%s\n", out.dump(2).c_str());
    return 0;
  }
  std::printf("| model | size | backend | threads | test | t/s | GB/s | GPU ms/token |\n");
  std::printf("| --- | ---: | --- | ---: | ---: | ---: | ---: | ---: |\n");
  for (const auto& r : results) {
    std::string bw = r.decode ? std::to_string(token_bytes * r.avg_ts / 1e9).substr(0, 6) : "";
    std::string gpu = r.gpu_ms_per_token > 0 ? std::to_string(r.gpu_ms_per_token).substr(0, 5) : "";
    std::printf("| %s | %.2f MiB | %s | %d | %s | %.2f ± %.2f | %s | %s |\n", name.c_str(), size_bytes / (1 << 20),
                (*runner)->backend_name(), threads, r.test.c_str(), r.avg_ts, r.stddev_ts, bw.c_str(), gpu.c_str());
  }
  return 0;
}

ZINC_REGISTER_COMMAND(bench, Command{"bench", "Measure prefill and decode throughput (like llama-bench)",
                                     [](CLI::App& sub) {
                                       auto o = std::make_shared<BenchOptions>();
                                       add_model_flags(sub, o->source, "GGUF model file");
                                       sub.add_option("-p,--n-prompt", o->prompts, "Prompt tokens, one batch (0: skip); a comma list runs each")
                                           ->delimiter(',')
                                           ->capture_default_str();
                                       sub.add_option("-n,--n-gen", o->gens, "Generated tokens, one per step (0: skip); a comma list runs each")
                                           ->delimiter(',')
                                           ->capture_default_str();
                                       sub.add_option("-d,--depth", o->depths, "Tokens already in the cache before each test; a comma list runs the tests at each")
                                           ->delimiter(',')
                                           ->capture_default_str();
                                       sub.add_option("-c,--ctx-size", o->ctx, "KV cache size in tokens (0: what the tests need)")->capture_default_str();
                                       sub.add_option("-r,--repetitions", o->reps, "Timed runs per test")->capture_default_str();
                                       sub.add_option("-t,--threads", o->threads, "CPU threads (0: all)")->capture_default_str();
                                       sub.add_option("-o,--output", o->output, "md or json")->capture_default_str();
                                       sub.add_option("--backend", o->backend, "auto, cpu or vulkan")->capture_default_str();
                                       sub.add_option("--device", o->device, "Vulkan device index (-1: auto)")->capture_default_str();
                                       sub.add_flag("--profile", o->profile, "Vulkan: GPU time per op kind of one prefill chunk and one decode step");
                                       return [o]() { return with_model(*o, run_bench); };
                                     }});

}  // namespace
}  // namespace zinc::cli
