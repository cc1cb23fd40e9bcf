#include "server/server.h"

#include <httplib.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <csignal>
#include <chrono>
#include <cstring>
#include <random>
#include <thread>

#include "engine/grammar_constraint.h"
#include "server/anthropic.h"
#include "server/api.h"
#include "server/embeddings.h"
#include "server/generation.h"
#include "server/infill.h"
#include "server/llama_native.h"
#include "server/metrics.h"
#include "server/ollama.h"
#include "server/responses.h"
#include "server/token_endpoints.h"
#include "server/web_page.h"

namespace zinc::server {

struct Server::Impl {
  Impl(const tokenizer::Tokenizer& t, const chat::ChatFormat& f, engine::Scheduler& s, ServerOptions o)
      : ctx{t, f, s, std::move(o), {}, {}, engine::TokenVocab::of(t), engine::grammar_tokens(t), {}, {}, {}} {
    ctx.responses.set_max_bytes(ctx.options.responses_store_bytes);
    const ServerOptions& opt = ctx.options;
    if (opt.ssl_cert_file.empty()) http = std::make_unique<httplib::Server>();
    else http = std::make_unique<httplib::SSLServer>(opt.ssl_cert_file.c_str(), opt.ssl_key_file.c_str());
  }
  GenerationContext ctx;
  std::unique_ptr<httplib::Server> http;  // an SSLServer with a certificate and key
  std::thread thread;
  int listen_socket = -1;
  int port = -1;
  bool started = false;
};

namespace {

bool is_loopback_host(std::string_view host) {
  return host == "localhost" || host == "::1" || host == "[::1]" || host.substr(0, 4) == "127.";
}

// The Host header's name without its port ("localhost:9090" → "localhost", "[::1]:80" → "[::1]").
std::string_view host_name(std::string_view h) {
  if (!h.empty() && h[0] == '[') {
    const size_t close = h.find(']');
    return close == std::string_view::npos ? h : h.substr(0, close + 1);
  }
  const size_t colon = h.find(':');
  return colon == std::string_view::npos ? h : h.substr(0, colon);
}

bool equal_constant_time(std::string_view a, std::string_view b) {
  unsigned diff = unsigned(a.size() != b.size());
  for (size_t i = 0; i < a.size() && i < b.size(); ++i) diff |= unsigned(uint8_t(a[i]) ^ uint8_t(b[i]));
  return diff == 0;
}

std::string endpoint_label(const std::string& path) {
  for (const char* known : {"/v1/chat/completions", "/v1/completions", "/chat/completions", "/completions", "/v1/messages",
                            "/v1/messages/count_tokens", "/v1/responses", "/api/chat", "/api/generate", "/api/show", "/api/tags", "/api/ps", "/api/embed", "/api/embeddings",
                            "/api/version", "/api/pull", "/api/create", "/api/copy", "/api/push", "/api/delete", "/v1/models",
                            "/v1/embeddings", "/embeddings", "/tokenize", "/detokenize", "/completion", "/infill", "/props", "/slots", "/apply-template", "/health", "/metrics", "/"})
    if (path == known) return path;
  if (path.rfind("/v1/models/", 0) == 0) return "/v1/models/{id}";
  if (path.rfind("/slots/", 0) == 0) return "/slots/{id}";
  if (path.rfind("/v1/responses/", 0) == 0)
    return path.size() > 12 && path.substr(path.size() - 12) == "/input_items" ? "/v1/responses/{id}/input_items" : "/v1/responses/{id}";
  return "other";
}

}  // namespace

Server::Server(const tokenizer::Tokenizer& tok, const chat::ChatFormat& format, engine::Scheduler& scheduler, ServerOptions options)
    : impl_(std::make_unique<Impl>(tok, format, scheduler, std::move(options))) {
  Impl& im = *impl_;
  GenerationContext& ctx = im.ctx;
  const ServerOptions& o = ctx.options;
  const int n_threads = o.http_threads > 0 ? o.http_threads : 4 * scheduler.options().parallel + 16;
  im.http->new_task_queue = [n_threads] { return new httplib::ThreadPool(size_t(n_threads)); };
  im.http->set_payload_max_length(o.max_body_bytes);
  im.http->set_read_timeout(std::chrono::seconds(30));
  im.http->set_write_timeout(std::chrono::seconds(30));
  im.http->set_socket_options([&im](int sock) {
    httplib::default_socket_options(sock);
    im.listen_socket = sock;  // httplib tries one socket per address; the last tried is the one bound
  });
  const bool loopback = is_loopback_host(o.host);

  im.http->set_pre_routing_handler([&ctx, loopback](const httplib::Request& req, httplib::Response& res) {
    if (loopback && req.has_header("Host") && !is_loopback_host(host_name(req.get_header_value("Host")))) {
      reply_error(res, {403, "the Host header '" + req.get_header_value("Host") + "' is not a loopback name", "invalid_request_error", "", "forbidden_host"});
      return httplib::Server::HandlerResponse::Handled;
    }
    // OpenAI's clients send the key as a bearer token, Anthropic's as x-api-key.
    const std::string& key = ctx.options.api_key;
    if (!key.empty() && req.path != "/" && req.path != "/health" &&
        !equal_constant_time(req.get_header_value("Authorization"), "Bearer " + key) &&
        !(req.has_header("x-api-key") && equal_constant_time(req.get_header_value("x-api-key"), key))) {
      if (req.path.rfind("/v1/messages", 0) == 0)
        reply_anthropic_error(res, 401, "missing or wrong API key: send 'x-api-key: KEY'");
      else
        reply_error(res, {401, "missing or wrong API key: send 'Authorization: Bearer KEY'", "authentication_error", "", "invalid_api_key"});
      return httplib::Server::HandlerResponse::Handled;
    }
    return httplib::Server::HandlerResponse::Unhandled;
  });
  im.http->set_error_handler(httplib::Server::HandlerWithResponse([&ctx](const httplib::Request& req, httplib::Response& res) {
    if (!res.body.empty()) return httplib::Server::HandlerResponse::Unhandled;
    ApiError e{res.status, "", "invalid_request_error", "", ""};
    if (res.status == 404) e.message = "no endpoint " + req.method + " " + req.path, e.code = "not_found";
    else if (res.status == 413) e.message = "the request body is larger than " + std::to_string(ctx.options.max_body_bytes) + " bytes", e.code = "request_too_large";
    else e.message = "bad request (HTTP " + std::to_string(res.status) + ")";
    if (res.status >= 500) e.type = "server_error";
    reply_error(res, e);
    return httplib::Server::HandlerResponse::Handled;
  }));
  // A JSON field of the wrong type that a handler read without checking it first is the
  // request's fault: a 400 in the shape of the API asked. Anything else is ours: a 500.
  im.http->set_exception_handler([](const httplib::Request& req, httplib::Response& res, std::exception_ptr thrown) {
    ApiError e{500, "internal error", "server_error", "", ""};
    try {
      if (thrown) std::rethrow_exception(thrown);
    } catch (const Json::type_error& x) {
      const std::string what = x.what();
      const size_t cut = what.find("] ");
      e = {400, "a request field has the wrong type: " + (cut == std::string::npos ? what : what.substr(cut + 2)),
           "invalid_request_error", "", ""};
    } catch (...) {
    }
    if (req.path.rfind("/api/", 0) == 0) reply_ollama_error(res, e.status, e.message);
    else if (req.path.rfind("/v1/messages", 0) == 0) reply_anthropic_error(res, e.status, e.message);
    else reply_error(res, e);
  });
  im.http->set_logger([&ctx](const httplib::Request& req, const httplib::Response& res) {
    ctx.metrics.request(endpoint_label(req.path), res.status);
  });

  for (const char* path : {"/v1/chat/completions", "/chat/completions"})
    im.http->Post(path, [&ctx](const httplib::Request& req, httplib::Response& res) { handle_generation(ctx, req, res, true); });
  for (const char* path : {"/v1/completions", "/completions"})
    im.http->Post(path, [&ctx](const httplib::Request& req, httplib::Response& res) { handle_generation(ctx, req, res, false); });
  // Ollama's API, for the tools that speak it.
  im.http->Post("/api/chat", [&ctx](const httplib::Request& req, httplib::Response& res) { handle_ollama_generation(ctx, req, res, true); });
  im.http->Post("/api/generate", [&ctx](const httplib::Request& req, httplib::Response& res) { handle_ollama_generation(ctx, req, res, false); });
  im.http->Post("/api/show", [&ctx](const httplib::Request& req, httplib::Response& res) { handle_ollama_show(ctx, req, res); });
  im.http->Post("/api/pull", [&ctx](const httplib::Request& req, httplib::Response& res) { handle_ollama_pull(ctx, req, res); });
  for (const char* path : {"/api/create", "/api/copy", "/api/push"})
    im.http->Post(path, [&ctx, path](const httplib::Request&, httplib::Response& res) { handle_ollama_unsupported(ctx, path, res); });
  im.http->Delete("/api/delete", [&ctx](const httplib::Request&, httplib::Response& res) {
    handle_ollama_unsupported(ctx, "/api/delete", res);
  });
  im.http->Get("/api/tags", [&ctx](const httplib::Request&, httplib::Response& res) { handle_ollama_tags(ctx, res); });
  im.http->Get("/api/ps", [&ctx](const httplib::Request&, httplib::Response& res) { handle_ollama_ps(ctx, res); });
  im.http->Post("/api/embed", [&ctx](const httplib::Request& req, httplib::Response& res) { handle_ollama_embed(ctx, req, res); });
  im.http->Post("/api/embeddings", [&ctx](const httplib::Request& req, httplib::Response& res) { handle_ollama_embeddings(ctx, req, res); });
  im.http->Get("/api/version", [](const httplib::Request&, httplib::Response& res) {
    res.set_content("{\"version\":\"" ZINC_VERSION "\"}", "application/json");
  });
  im.http->Post("/v1/responses", [&ctx](const httplib::Request& req, httplib::Response& res) { handle_responses(ctx, req, res); });
  im.http->Get("/v1/responses/([^/]+)", [&ctx](const httplib::Request& req, httplib::Response& res) {
    handle_stored_response(ctx, req.matches[1], false, res);
  });
  im.http->Delete("/v1/responses/([^/]+)", [&ctx](const httplib::Request& req, httplib::Response& res) {
    handle_stored_response(ctx, req.matches[1], true, res);
  });
  im.http->Get("/v1/responses/([^/]+)/input_items", [&ctx](const httplib::Request& req, httplib::Response& res) {
    handle_input_items(ctx, req, req.matches[1], res);
  });
  im.http->Post("/v1/messages", [&ctx](const httplib::Request& req, httplib::Response& res) { handle_messages(ctx, req, res); });
  im.http->Post("/v1/messages/count_tokens",
               [&ctx](const httplib::Request& req, httplib::Response& res) { handle_count_tokens(ctx, req, res); });
  auto model = [&ctx] {
    return Json{{"id", ctx.options.model_name}, {"object", "model"}, {"created", unix_time()}, {"owned_by", "zinc"},
                {"meta", {{"n_ctx", ctx.scheduler.options().n_ctx}, {"n_vocab", ctx.tok.n_tokens()}}}};
  };
  im.http->Get("/v1/models", [model](const httplib::Request&, httplib::Response& res) {
    res.set_content(dump(Json{{"object", "list"}, {"data", Json::array({model()})}}), "application/json");
  });
  im.http->Get("/v1/models/(.+)", [&ctx, model](const httplib::Request& req, httplib::Response& res) {
    const std::string id = req.matches[1];
    if (id != ctx.options.model_name)
      return reply_error(res, {404, "the model '" + id + "' does not exist (this server has '" + ctx.options.model_name + "')",
                               "invalid_request_error", "model", "model_not_found"});
    res.set_content(dump(model()), "application/json");
  });
  for (const char* path : {"/v1/embeddings", "/embeddings"})
    im.http->Post(path, [&ctx](const httplib::Request& req, httplib::Response& res) { handle_embeddings(ctx, req, res); });
  // llama.cpp's own endpoints.
  im.http->Post("/completion", [&ctx](const httplib::Request& req, httplib::Response& res) { handle_llama_completion(ctx, req, res); });
  im.http->Post("/infill", [&ctx](const httplib::Request& req, httplib::Response& res) { handle_infill(ctx, req, res); });
  im.http->Get("/props", [&ctx](const httplib::Request&, httplib::Response& res) { handle_props(ctx, res); });
  im.http->Get("/slots", [&ctx](const httplib::Request& req, httplib::Response& res) { handle_slots(ctx, req, res); });
  im.http->Post("/slots/[0-9]+", [&ctx](const httplib::Request& req, httplib::Response& res) { handle_slot_action(ctx, req, res); });
  im.http->Post("/apply-template", [&ctx](const httplib::Request& req, httplib::Response& res) { handle_apply_template(ctx, req, res); });
  im.http->Post("/tokenize", [&ctx](const httplib::Request& req, httplib::Response& res) { handle_tokenize(ctx, req, res); });
  im.http->Post("/detokenize", [&ctx](const httplib::Request& req, httplib::Response& res) { handle_detokenize(ctx, req, res); });
  im.http->Get("/health", [](const httplib::Request&, httplib::Response& res) {
    res.set_content("{\"status\":\"ok\"}", "application/json");
  });
  im.http->Get("/metrics", [&ctx](const httplib::Request&, httplib::Response& res) {
    res.set_content(ctx.metrics.render(ctx.scheduler.stats()), "text/plain; version=0.0.4");
  });
  im.http->Get("/", [](const httplib::Request&, httplib::Response& res) {
    const std::string_view page = web_page();
    res.set_content(page.data(), page.size(), "text/html; charset=utf-8");
  });
}

Server::~Server() { stop(); }

Status Server::start() {
  Impl& im = *impl_;
  if (im.started) return error("the server is already started");
  const ServerOptions& o = im.ctx.options;
  if (o.port < 0 || o.port > 65535) return error("port %d is out of range", o.port);
  if (o.ssl_cert_file.empty() != o.ssl_key_file.empty()) return error("https needs both a certificate and its private key");
  if (!im.http->is_valid())
    return error("%s, %s: cannot load the certificate and its private key (PEM files that belong together)", o.ssl_cert_file.c_str(),
                 o.ssl_key_file.c_str());
  if (o.port == 0) {
    im.port = im.http->bind_to_any_port(o.host);
  } else {
    im.port = im.http->bind_to_port(o.host, o.port) ? o.port : -1;
  }
  if (im.port <= 0) return error("cannot listen on %s:%d (address in use or not local?)", o.host.c_str(), o.port);
  // httplib listens with a backlog of 5 (CPPHTTPLIB_LISTEN_BACKLOG, compiled into libcpp-httplib).
  // More clients than that connecting at once, before the accept thread takes them, overflow the
  // kernel's accept queue: it drops their SYNs (the client retries a second later) or, past its
  // syncookie fallback, resets connections the client already sent its request on. listen() again
  // on the bound socket raises the backlog.
  if (::listen(im.listen_socket, SOMAXCONN) != 0) {
    const int e = errno;
    ::close(im.listen_socket);
    return error("cannot listen on %s:%d: %s", o.host.c_str(), im.port, std::strerror(e));
  }
  std::signal(SIGPIPE, SIG_IGN);  // a client that hangs up is a failed write, not the end of the process
  im.started = true;
  im.thread = std::thread([&im] { im.http->listen_after_bind(); });
  return ok_status();
}

int Server::port() const { return impl_->port; }

void Server::stop() {
  Impl& im = *impl_;
  if (!im.started) return;
  im.ctx.stopping.store(true);
  im.http->stop();
  if (im.thread.joinable()) im.thread.join();
  im.started = false;
}

}  // namespace zinc::server
