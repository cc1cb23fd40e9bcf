// zinc serve -m MODEL [--host 127.0.0.1] [--port 9090] [--parallel 4] [-c CTX] [--api-key KEY]
// [--alias NAME] [-t THREADS] [--backend auto|cpu|vulkan] [--device N] [--chat-template-file FILE.jinja]
// [--pooling mean|last|cls] [--cache-ram MIB] [--responses-store MIB] [--ssl-cert-file PEM --ssl-key-file PEM]: the
// OpenAI-compatible server (https with a certificate). SIGINT / SIGTERM stop it cleanly.
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>

#include "chat/conversation.h"
#include "cli/command.h"
#include "cli/model_flags.h"
#include "engine/runner.h"
#include "engine/scheduler.h"
#include "gguf/file.h"
#include "model/model.h"
#include "model/quant_mix.h"
#include "server/server.h"
#include "tokenizer/tokenizer.h"

namespace zinc::cli {
namespace {

struct ServeOptions {
  std::string model, host = "127.0.0.1", api_key, alias, backend = "auto", template_file, pooling, ssl_cert_file, ssl_key_file;
  hub::ModelSource source;  // -m and the flags that fetch a model; resolved into `model`
  int port = 9090, parallel = 4, threads = 0, device = -1;
  int64_t n_ctx = 4096, prefill_chunk = 256, cache_ram_mib = 2048, responses_store_mib = 64;
};

// What Ollama's /api/tags and /api/show report of the model.
server::ModelCard model_card(const model::Model& m, const std::string& path) {
  server::ModelCard card;
  card.path = path;
  const gguf::File& f = m.file();
  if (auto arch = f.find_string("general.architecture"); arch.ok() && *arch) card.family = std::string(**arch);
  for (const auto& t : f.tensors()) card.parameters += t.n_elements();
  if (auto ft = f.find_u32("general.file_type"); ft.ok() && *ft)
    for (const auto& mix : model::quant_mixes())
      if (mix.file_type == **ft) card.quantization = std::string(mix.name);
  card.file_bytes = int64_t(f.model_bytes());
  card.context_length = m.hparams().n_ctx_train;
  return card;
}

int serve(const ServeOptions& o) {
  if (o.parallel < 1 || o.parallel > 256) return fail("--parallel must be between 1 and 256");
  if (o.n_ctx < 16) return fail("--ctx-size must be at least 16 tokens");
  if (o.cache_ram_mib < 0 || o.cache_ram_mib > (int64_t(1) << 30)) return fail("--cache-ram must be between 0 and 2^30 MiB");
  if (o.responses_store_mib < 0 || o.responses_store_mib > (int64_t(1) << 30))
    return fail("--responses-store must be between 0 and 2^30 MiB");
  if (o.ssl_cert_file.empty() != o.ssl_key_file.empty()) return fail("https needs both --ssl-cert-file and --ssl-key-file");
  for (const std::string& pem : {o.ssl_cert_file, o.ssl_key_file})
    if (!pem.empty() && !read_text(pem).ok()) return fail(pem + ": cannot open");
  auto backend = engine::parse_backend(o.backend);
  if (!backend.ok()) return fail(backend.status().message());
  // Signals go to the waiting main thread only: block them before any thread starts.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  auto model = model::Model::load(o.model);
  if (!model.ok()) return fail(model.status().message());
  auto tok = tokenizer::Tokenizer::load((*model)->file());
  if (!tok.ok()) return fail(o.model + ": " + tok.status().message());
  std::string template_source;
  if (!o.template_file.empty()) {
    auto text = read_text(o.template_file);
    if (!text.ok()) return fail(text.status().message());
    template_source = std::move(*text);
  }
  auto format = chat::ChatFormat::create((*model)->file(), **tok, template_source);
  if (!format.ok()) return fail((o.template_file.empty() ? o.model : o.template_file) + ": " + format.status().message());
  if (format->is_fallback()) std::fprintf(stderr, "zinc: the model has no chat template; chats use ChatML\n");

  // /v1/embeddings pools as --pooling says, else as the model's metadata does (llama.cpp's
  // {arch}.pooling_type: 1 mean, 2 cls, 3 last), else by the mean.
  engine::Runner::Pooling pooling = engine::Runner::Pooling::kMean;
  if (!o.pooling.empty()) {
    if (o.pooling == "mean") pooling = engine::Runner::Pooling::kMean;
    else if (o.pooling == "last") pooling = engine::Runner::Pooling::kLast;
    else if (o.pooling == "cls" || o.pooling == "first") pooling = engine::Runner::Pooling::kFirst;
    else return fail("--pooling must be mean, last or cls");
  } else if (auto arch = (*model)->file().find_string("general.architecture"); arch.ok() && *arch) {
    if (auto type = (*model)->file().find_u32(std::string(**arch) + ".pooling_type"); type.ok() && *type) {
      if (**type == 2) pooling = engine::Runner::Pooling::kFirst;
      if (**type == 3) pooling = engine::Runner::Pooling::kLast;
    }
  }

  engine::RunnerOptions ro;
  ro.backend = *backend;
  ro.device = o.device;
  ro.n_threads = o.threads;
  ro.max_seqs = o.parallel;
  ro.n_ctx = o.n_ctx * o.parallel;  // every sequence can fill its context; cached prefixes use the rest
  auto runner = engine::Runner::create(**model, ro);
  if (!runner.ok()) return fail(runner.status().message());
  engine::SchedulerOptions so;
  so.parallel = o.parallel;
  so.n_ctx = o.n_ctx;
  so.prefill_chunk = o.prefill_chunk;
  so.max_prefix_state_bytes = size_t(o.cache_ram_mib) << 20;
  engine::Scheduler scheduler(**runner, so);

  server::ServerOptions sv;
  sv.host = o.host;
  sv.port = o.port;
  sv.api_key = o.api_key;
  sv.model_name = !o.alias.empty() ? o.alias : hub::model_display_name(o.source, o.model);
  sv.pooling = pooling;
  sv.responses_store_bytes = size_t(o.responses_store_mib) << 20;
  sv.card = model_card(**model, o.model);
  sv.ssl_cert_file = o.ssl_cert_file;
  sv.ssl_key_file = o.ssl_key_file;
  sv.card.on_gpu = std::string_view((*runner)->backend_name()) != "cpu";
  server::Server server(**tok, *format, scheduler, sv);
  if (Status s = server.start(); !s.ok()) return fail(s.message());
  std::fprintf(stderr, "zinc: serving %s on %s://%s:%d/ (%d parallel, %lld-token context, %s)\n", sv.model_name.c_str(), o.ssl_cert_file.empty() ? "http" : "https",
               o.host.find(':') != std::string::npos ? ("[" + o.host + "]").c_str() : o.host.c_str(), server.port(),
               o.parallel, (long long)o.n_ctx, (*runner)->backend_name());
  std::fflush(stderr);
  int sig = 0;
  sigwait(&signals, &sig);
  std::fprintf(stderr, "zinc: %s, shutting down\n", sig == SIGINT ? "SIGINT" : "SIGTERM");
  server.stop();
  return 0;
}

ZINC_REGISTER_COMMAND(serve, Command{"serve", "Serve the model over an OpenAI-compatible HTTP API (and a web chat at /)",
                                     [](CLI::App& sub) {
                                       auto o = std::make_shared<ServeOptions>();
                                       add_model_flags(sub, o->source, "GGUF model file");
                                       sub.add_option("--host", o->host, "Address to listen on")->capture_default_str();
                                       sub.add_option("--port", o->port, "Port (0: any free port)")->capture_default_str();
                                       sub.add_option("--parallel", o->parallel, "Sequences decoded together")->capture_default_str();
                                       sub.add_option("-c,--ctx-size", o->n_ctx, "Tokens per sequence (prompt + completion)")->capture_default_str();
                                       sub.add_option("--api-key", o->api_key, "Require 'Authorization: Bearer KEY'");
                                       sub.add_option("--ssl-cert-file", o->ssl_cert_file, "Serve https with this PEM certificate (and --ssl-key-file)");
                                       sub.add_option("--ssl-key-file", o->ssl_key_file, "The certificate's PEM private key");
                                       sub.add_option("--alias", o->alias, "Model name reported by /v1/models (default: the file name, or the repository)");
                                       sub.add_option("--chat-template-file", o->template_file, "Jinja chat template to use instead of the model's");
                                       sub.add_option("--prefill-chunk", o->prefill_chunk, "Prompt tokens per batched step")->capture_default_str();
                                       sub.add_option("--cache-ram", o->cache_ram_mib,
                                                      "MiB of host memory for cached prompts' recurrent state (hybrid models; 0: none)")
                                           ->capture_default_str();
                                       sub.add_option("--responses-store", o->responses_store_mib,
                                                      "MiB of memory for /v1/responses kept for previous_response_id (0: none)")
                                           ->capture_default_str();
                                       sub.add_option("-t,--threads", o->threads, "CPU threads (0: all)")->capture_default_str();
                                       sub.add_option("--backend", o->backend, "auto, cpu or vulkan")->capture_default_str();
                                       sub.add_option("--device", o->device, "Vulkan device index (see zinc devices; -1: auto)")->capture_default_str();
                                       sub.add_option("--pooling", o->pooling, "How /v1/embeddings pools tokens: mean, last or cls (default: the model's, else mean)");
                                       return [o]() { return with_model(*o, serve); };
                                     }});

}  // namespace
}  // namespace zinc::cli
