// zinc run -m MODEL --tokens 1,2,3 [-n 128] [sampling flags]: generates from a prompt given as
// token ids and prints the generated ids as they come (text prompts arrive with the tokenizer).
#include <cstdio>
#include <memory>
#include <string>

#include "cli/command.h"
#include "cli/token_list.h"
#include "engine/generate.h"
#include "engine/runner.h"
#include "gguf/file.h"
#include "model/model.h"

namespace zinc::cli {
namespace {

struct RunOptions {
  std::string model, tokens, stop, backend = "auto";
  int n_predict = 128, threads = 0;
  int64_t n_ctx = 4096;
  engine::SamplerParams sampling;
};

int run_generate(const RunOptions& o) {
  auto prompt = parse_token_list("--tokens", o.tokens);
  if (!prompt.ok()) return fail(prompt.status().message());
  auto backend = engine::parse_backend(o.backend);
  if (!backend.ok()) return fail(backend.status().message());
  auto model = model::Model::load(o.model);
  if (!model.ok()) return fail(model.status().message());

  engine::GenerateOptions go;
  go.max_new_tokens = o.n_predict;
  if (!o.stop.empty()) {
    auto stop = parse_token_list("--stop", o.stop);
    if (!stop.ok()) return fail(stop.status().message());
    go.stop_tokens = *stop;
  } else if (auto eos = (*model)->file().find_u32("tokenizer.ggml.eos_token_id"); eos.ok() && *eos) {
    go.stop_tokens = {int32_t(**eos)};
  }
  engine::RunnerOptions ro;
  ro.backend = *backend;
  ro.n_threads = o.threads;
  ro.n_ctx = std::max<int64_t>(o.n_ctx, int64_t(prompt->size()) + o.n_predict);
  auto runner = engine::Runner::create(**model, ro);
  if (!runner.ok()) return fail(runner.status().message());
  auto seq = (*runner)->cache().add_sequence();
  if (!seq.ok()) return fail(seq.status().message());

  engine::Sampler sampler(o.sampling, int32_t((*model)->hparams().n_vocab));
  auto res = engine::generate(**runner, *seq, *prompt, sampler, go, [](int32_t t) {
    std::printf("%d ", t);
    std::fflush(stdout);
    return true;
  });
  std::printf("\n");
  if (!res.ok()) return fail(res.status().message());
  const double n = double(res->tokens.size());
  std::fprintf(stderr, "zinc: prompt %lld tokens, %.1f t/s; generated %zu tokens, %.1f t/s (%s)\n",
               (long long)res->prompt_tokens, double(res->prompt_tokens) / std::max(res->prefill_seconds, 1e-9),
               res->tokens.size(), n / std::max(res->decode_seconds, 1e-9),
               res->reason == engine::StopReason::kEndOfGeneration ? "end of generation" : "token limit");
  return 0;
}

ZINC_REGISTER_COMMAND(run, Command{"run", "Generate tokens from a prompt of token ids",
                                   [](CLI::App& sub) {
                                     auto o = std::make_shared<RunOptions>();
                                     auto& s = o->sampling;
                                     sub.add_option("-m,--model", o->model, "GGUF model file")->required();
                                     sub.add_option("--tokens", o->tokens, "Prompt token ids, comma separated")->required();
                                     sub.add_option("-n,--n-predict", o->n_predict, "Tokens to generate at most")->capture_default_str();
                                     sub.add_option("--stop", o->stop, "End-of-generation ids (default: the model's EOS)");
                                     sub.add_option("-c,--ctx-size", o->n_ctx, "KV cache size in tokens")->capture_default_str();
                                     sub.add_option("--temp", s.temperature, "Temperature (<= 0: greedy)")->capture_default_str();
                                     sub.add_option("--top-k", s.top_k, "Top-k (0: off)")->capture_default_str();
                                     sub.add_option("--top-p", s.top_p, "Top-p (1: off)")->capture_default_str();
                                     sub.add_option("--min-p", s.min_p, "Min-p (0: off)")->capture_default_str();
                                     sub.add_option("--repeat-last-n", s.penalty_last_n, "Penalty window (0: off, -1: all)")->capture_default_str();
                                     sub.add_option("--repeat-penalty", s.repeat_penalty, "Repetition penalty (1: off)")->capture_default_str();
                                     sub.add_option("--presence-penalty", s.presence_penalty, "Presence penalty")->capture_default_str();
                                     sub.add_option("--frequency-penalty", s.frequency_penalty, "Frequency penalty")->capture_default_str();
                                     sub.add_option("-s,--seed", s.seed, "Random seed")->capture_default_str();
                                     sub.add_option("-t,--threads", o->threads, "CPU threads (0: all)")->capture_default_str();
                                     sub.add_option("--backend", o->backend, "auto or cpu")->capture_default_str();
                                     return [o]() { return run_generate(*o); };
                                   }});

}  // namespace
}  // namespace zinc::cli
