// zinc perplexity -m MODEL -f TEXT [-c 512] [--chunks N] [--backend B] [--device N] [-t THREADS]:
// the perplexity of a text as llama.cpp's llama-perplexity measures it. The text's tokens (BOS
// first where the vocabulary adds one) are cut into chunks of -c tokens; each chunk runs in a
// fresh sequence with its first token replaced by BOS, and only the second half of its tokens is
// scored (each by the row before it), so every scored token sees at least c/2 tokens of context.
// Prints the running perplexity after each chunk ("[1]8.1234,[2]...") and the final estimate
// with its standard error.
#include <chrono>
#include <cmath>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "cli/command.h"
#include "cli/model_flags.h"
#include "engine/runner.h"
#include "model/model.h"
#include "tokenizer/tokenizer.h"

namespace zinc::cli {
namespace {

struct PerplexityOptions {
  std::string model, file, backend = "auto", kv_type = "f16";
  hub::ModelSource source;  // -m and the flags that fetch a model; resolved into `model`
  int64_t ctx = 512, chunks = -1;
  int threads = 0, device = -1;
};

// -log p(target) under a logits row, by a log-sum-exp in double.
double nll_of(std::span<const float> row, int32_t target) {
  float max = row[0];
  for (float x : row) max = std::max(max, x);
  double sum = 0;
  for (float x : row) sum += std::exp(double(x) - max);
  return std::log(sum) + max - double(row[size_t(target)]);
}

int run_perplexity(const PerplexityOptions& o) {
  if (o.ctx < 4) return fail("-c: the context must be at least 4 tokens, got " + std::to_string(o.ctx));
  if (o.chunks == 0 || o.chunks < -1) return fail("--chunks: expected a positive number of chunks (or -1: all), got " + std::to_string(o.chunks));
  auto backend = engine::parse_backend(o.backend);
  if (!backend.ok()) return fail(backend.status().message());
  if (o.kv_type != "f16" && o.kv_type != "f32") return fail("--kv-type: expected f16 or f32, got '" + o.kv_type + "'");
  auto text = read_text(o.file);
  if (!text.ok()) return fail(text.status().message());
  auto model = model::Model::load(o.model);
  if (!model.ok()) return fail(model.status().message());
  auto tok = tokenizer::Tokenizer::load((*model)->file());
  if (!tok.ok()) return fail(tok.status().message());
  const std::vector<int32_t> tokens = (*tok)->encode(*text, /*add_special=*/true, /*parse_special=*/false);
  if (int64_t(tokens.size()) < 2 * o.ctx)
    return fail(o.file + ": " + std::to_string(tokens.size()) + " tokens; perplexity with a context of " + std::to_string(o.ctx) +
                " needs at least " + std::to_string(2 * o.ctx));
  const int64_t n_chunks = o.chunks < 0 ? int64_t(tokens.size()) / o.ctx : std::min<int64_t>(o.chunks, int64_t(tokens.size()) / o.ctx);

  engine::RunnerOptions ro;
  ro.backend = *backend;
  ro.device = o.device;
  ro.n_threads = o.threads;
  ro.n_ctx = o.ctx;
  ro.kv_type = o.kv_type == "f32" ? kv::KvType::kF32 : kv::KvType::kF16;
  auto runner = engine::Runner::create(**model, ro);
  if (!runner.ok()) return fail(runner.status().message());
  std::fprintf(stderr, "zinc: perplexity over %lld chunks of %lld tokens (%zu in the text), %s\n", (long long)n_chunks, (long long)o.ctx,
               tokens.size(), (*runner)->device_name().c_str());

  const size_t n_vocab = (*model)->hparams().n_vocab;
  const bool add_bos = (*tok)->vocab().flags().add_bos && (*tok)->bos() != tokenizer::kNoToken;
  const int64_t first = o.ctx / 2;
  double nll = 0, nll2 = 0;
  int64_t count = 0;
  std::vector<int32_t> chunk;
  const auto t0 = std::chrono::steady_clock::now();
  for (int64_t c = 0; c < n_chunks; ++c) {
    chunk.assign(tokens.begin() + c * o.ctx, tokens.begin() + (c + 1) * o.ctx);
    if (add_bos) chunk[0] = (*tok)->bos();
    auto seq = (*runner)->cache().add_sequence();
    if (!seq.ok()) return fail(seq.status().message());
    auto logits = (*runner)->decode(*seq, chunk, /*all_logits=*/true);
    if (!logits.ok()) return fail(logits.status().message());
    for (int64_t j = first; j + 1 < o.ctx; ++j) {
      const double v = nll_of(logits->subspan(size_t(j) * n_vocab, n_vocab), tokens[size_t(c * o.ctx + j + 1)]);
      nll += v;
      nll2 += v * v;
      ++count;
    }
    (*runner)->cache().remove_sequence(*seq);
    if (c == 0) {
      const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      std::fprintf(stderr, "zinc: %.2f seconds per chunk\n", s);
    }
    std::printf("[%lld]%.4f,", (long long)(c + 1), std::exp(nll / double(count)));
    std::fflush(stdout);
  }
  const double mean = nll / double(count), ppl = std::exp(mean);
  const double var = nll2 / double(count) - mean * mean;
  std::printf("\nFinal estimate: PPL = %.4f +/- %.5f\n", ppl, var > 0 && count > 1 ? std::sqrt(var / double(count - 1)) * ppl : 0.0);
  return 0;
}

ZINC_REGISTER_COMMAND(perplexity, Command{"perplexity", "Measure a model's perplexity over a text file (like llama-perplexity)",
                                          [](CLI::App& sub) {
                                            auto o = std::make_shared<PerplexityOptions>();
                                            add_model_flags(sub, o->source, "GGUF model file");
                                            sub.add_option("-f,--file", o->file, "Text file to score")->required();
                                            sub.add_option("-c,--ctx-size", o->ctx, "Tokens per chunk (the second half of each is scored)")
                                                ->capture_default_str();
                                            sub.add_option("--chunks", o->chunks, "Chunks to score at most (-1: all)")->capture_default_str();
                                            sub.add_option("--backend", o->backend, "auto, cpu or vulkan")->capture_default_str();
                                            sub.add_option("--device", o->device, "Vulkan device index (-1: auto)")->capture_default_str();
                                            sub.add_option("--kv-type", o->kv_type, "KV cache element type: f16 or f32")->capture_default_str();
                                            sub.add_option("-t,--threads", o->threads, "CPU threads (0: all)")->capture_default_str();
                                            return [o]() { return with_model(*o, run_perplexity); };
                                          }});

}  // namespace
}  // namespace zinc::cli
