// zinc logits -m MODEL --tokens 1,2,3 -o FILE [--stepwise] [--backend auto|cpu|vulkan] [--device N] [-t THREADS]:
// float32 logits for every position (rows of n_vocab), the prompt as one batch or one token per
// step.
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "cli/command.h"
#include "cli/model_flags.h"
#include "cli/token_list.h"
#include "engine/runner.h"
#include "model/model.h"

namespace zinc::cli {
namespace {

struct LogitsOptions {
  std::string model, tokens, output, backend = "auto", kv_type = "f16";
  hub::ModelSource source;  // -m and the flags that fetch a model; resolved into `model`
  bool stepwise = false;
  int threads = 0, device = -1;
};

int run_logits(const LogitsOptions& o) {
  auto tokens = parse_token_list("--tokens", o.tokens);
  if (!tokens.ok()) return fail(tokens.status().message());
  auto backend = engine::parse_backend(o.backend);
  if (!backend.ok()) return fail(backend.status().message());
  auto model = model::Model::load(o.model);
  if (!model.ok()) return fail(model.status().message());
  engine::RunnerOptions ro;
  ro.backend = *backend;
  ro.device = o.device;
  ro.n_threads = o.threads;
  ro.n_ctx = int64_t(tokens->size());
  if (o.kv_type != "f16" && o.kv_type != "f32") return fail("--kv-type: expected f16 or f32, got '" + o.kv_type + "'");
  ro.kv_type = o.kv_type == "f32" ? kv::KvType::kF32 : kv::KvType::kF16;
  auto runner = engine::Runner::create(**model, ro);
  if (!runner.ok()) return fail(runner.status().message());
  auto seq = (*runner)->cache().add_sequence();
  if (!seq.ok()) return fail(seq.status().message());

  const size_t n_vocab = (*model)->hparams().n_vocab;
  std::vector<float> logits;
  logits.reserve(tokens->size() * n_vocab);
  if (o.stepwise) {
    for (size_t i = 0; i < tokens->size(); ++i) {
      auto rows = (*runner)->decode(*seq, std::span<const int32_t>(*tokens).subspan(i, 1), false);
      if (!rows.ok()) return fail(rows.status().message());
      logits.insert(logits.end(), rows->begin(), rows->end());
    }
  } else {
    auto rows = (*runner)->decode(*seq, *tokens, true);
    if (!rows.ok()) return fail(rows.status().message());
    logits.assign(rows->begin(), rows->end());
  }
  std::unique_ptr<FILE, int (*)(FILE*)> f(std::fopen(o.output.c_str(), "wb"), std::fclose);
  if (!f || std::fwrite(logits.data(), 4, logits.size(), f.get()) != logits.size())
    return fail(o.output + ": cannot write the logits file");
  std::fprintf(stderr, "zinc: wrote %zu rows of %zu logits (%s) to %s\n", tokens->size(), n_vocab,
               o.stepwise ? "stepwise" : "batch", o.output.c_str());
  return 0;
}

ZINC_REGISTER_COMMAND(logits, Command{"logits", "Write float32 logits for every position of a token list",
                                      [](CLI::App& sub) {
                                        auto o = std::make_shared<LogitsOptions>();
                                        add_model_flags(sub, o->source, "GGUF model file");
                                        sub.add_option("--tokens", o->tokens, "Token ids, comma separated")->required();
                                        sub.add_option("-o,--output", o->output, "Output file (float32 rows of n_vocab)")->required();
                                        sub.add_flag("--stepwise", o->stepwise, "One token per step instead of one batch");
                                        sub.add_option("--backend", o->backend, "auto, cpu or vulkan")->capture_default_str();
                                        sub.add_option("--device", o->device, "Vulkan device index (-1: auto)")->capture_default_str();
                                        sub.add_option("--kv-type", o->kv_type, "KV cache element type: f16 or f32")->capture_default_str();
                                        sub.add_option("-t,--threads", o->threads, "CPU threads (0: all)")->capture_default_str();
                                        return [o]() { return with_model(*o, run_logits); };
                                      }});

}  // namespace
}  // namespace zinc::cli
