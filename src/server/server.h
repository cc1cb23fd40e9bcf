// The OpenAI-compatible HTTP server: POST /v1/chat/completions and /v1/completions (streamed as
// server-sent events or not), GET /v1/models, /health, /metrics (Prometheus) and / (the embedded
// web chat); also OpenAI's /v1/responses, Anthropic's /v1/messages and Ollama's /api/*, translated
// onto the chat path. Requests become engine::Scheduler requests; tokens come back through the
// request's stream, are turned into text (stop strings, <think> reasoning) and written in the
// shapes of the API asked.
//
// Safety: a client that disconnects from a stream cancels its sequence; with an API key every
// endpoint but / and /health needs "Authorization: Bearer KEY" (or "x-api-key: KEY"); bound to a loopback address, a
// Host header that is not a loopback name is refused (DNS rebinding); bodies are size-limited;
// every bad request is a 4xx with {"error": {message, type, param, code}}.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "chat/conversation.h"
#include "core/status.h"
#include "engine/runner.h"
#include "engine/scheduler.h"
#include "tokenizer/tokenizer.h"

namespace zinc::server {

// What Ollama's /api/tags and /api/show tell of the model.
struct ModelCard {
  std::string path;          // the GGUF file served
  std::string family;        // general.architecture
  int64_t parameters = 0;    // weights' elements
  std::string quantization;  // "Q4_K_M" (general.file_type), or ""
  int64_t file_bytes = 0;
  int64_t context_length = 0;  // the model's trained context
  bool on_gpu = false;         // the weights are in device memory (/api/ps size_vram)
};

struct ServerOptions {
  std::string host = "127.0.0.1";
  int port = 9090;  // 0: any free port (see Server::port)
  std::string api_key;
  std::string model_name = "zinc";  // the id /v1/models reports
  size_t max_body_bytes = 8u << 20;
  int http_threads = 0;  // 0: 4 per parallel sequence plus 16
  engine::Runner::Pooling pooling = engine::Runner::Pooling::kMean;  // /v1/embeddings
  size_t responses_store_bytes = size_t(64) << 20;  // /v1/responses kept in memory (0: none)
  ModelCard card;
  std::string ssl_cert_file, ssl_key_file;  // both set: https (PEM files) instead of http
};

class Server {
 public:
  // Borrows everything; all must outlive the server.
  Server(const tokenizer::Tokenizer& tok, const chat::ChatFormat& format, engine::Scheduler& scheduler, ServerOptions options);
  ~Server();  // stop()
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  // Binds and serves on a thread of its own; an error when the address cannot be bound.
  Status start();
  int port() const;
  // Stops listening, ends running streams and waits for the request threads. Idempotent.
  void stop();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace zinc::server
