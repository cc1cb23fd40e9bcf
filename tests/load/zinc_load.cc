// zinc_load: a bounded load test on loopback. Starts `zinc serve` on a free port (or uses --url),
// runs N concurrent streaming clients for S seconds, and reports aggregate tok/s, p50/p99 time to
// first token, errors, incomplete streams and the server's RSS before and after. Exit 1 on any
// error or incomplete stream, or when the server does not shut down cleanly on SIGTERM; 77 (skip)
// when the model is missing.
//
//   zinc_load --zinc build/zinc --model ../shared/models/stories260K.gguf --clients 16 --parallel 4 --seconds 60
// (--rounds N repeats the load on the same server and prints its RSS after each round; --burst-ms MS
// starts each round with the server stopped for MS while every client connects, so the kernel must
// hold the whole burst of connections until the server accepts them; their first time to first
// token includes the stop)
#include <arpa/inet.h>
#include <httplib.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;

struct Options {
  std::string zinc = "build/zinc", model, host = "127.0.0.1";
  int port = 0, clients = 16, parallel = 4, seconds = 60, max_tokens = 64, threads = 0, rounds = 1, burst_ms = 0;
};

int free_port() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
  socklen_t n = sizeof a;
  getsockname(fd, reinterpret_cast<sockaddr*>(&a), &n);
  close(fd);
  return ntohs(a.sin_port);
}

double rss_mib(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("VmRSS:", 0) == 0) return std::stod(line.substr(6)) / 1024.0;
  return -1;
}

struct Totals {
  std::mutex mu;
  std::vector<double> ttft_s;
  int64_t requests = 0, errors = 0, incomplete = 0, tokens = 0;
  std::string first_error;
};

void client_loop(const Options& o, int id, Clock::time_point deadline, std::atomic<int>& ready, Totals& t) {
  httplib::Client c(o.host, o.port);
  c.set_read_timeout(std::chrono::seconds(120));
  // A loopback connect takes microseconds unless the server's kernel dropped the SYN (its accept
  // queue was full); the retry comes a second later, so a slower connect counts as an error.
  c.set_connection_timeout(std::chrono::milliseconds(500));
  ready.fetch_add(1);
  int round = 0;
  while (Clock::now() < deadline) {
    nlohmann::json body = {{"prompt", "Once upon a time, there was a little " + std::string(id % 2 ? "dog" : "girl") + " named " +
                                          std::to_string(id) + "."},
                           {"max_tokens", o.max_tokens}, {"temperature", 0.8}, {"seed", id * 1000 + round++},
                           {"stream", true}, {"stream_options", {{"include_usage", true}}}};
    const auto t0 = Clock::now();
    double ttft = -1;
    bool done = false, finished = false;
    int64_t tokens = 0;
    std::string buf;
    httplib::Request req;
    req.method = "POST";
    req.path = "/v1/completions";
    req.body = body.dump();
    req.set_header("Content-Type", "application/json");
    req.content_receiver = [&](const char* data, size_t n, uint64_t, uint64_t) {
      buf.append(data, n);
      size_t end;
      while ((end = buf.find("\n\n")) != std::string::npos) {
        const std::string ev = buf.substr(0, end);
        buf.erase(0, end + 2);
        if (ev.rfind("data: ", 0) != 0) continue;
        if (ev == "data: [DONE]") {
          done = true;
          continue;
        }
        auto j = nlohmann::json::parse(ev.substr(6), nullptr, false);
        if (j.is_discarded()) continue;
        if (j.contains("usage") && j["usage"].is_object()) tokens = j["usage"]["completion_tokens"];
        if (j.contains("choices") && !j["choices"].empty()) {
          if (ttft < 0 && !j["choices"][0]["text"].get<std::string>().empty())
            ttft = std::chrono::duration<double>(Clock::now() - t0).count();
          if (!j["choices"][0]["finish_reason"].is_null()) finished = true;
        }
      }
      return true;
    };
    httplib::Response res;
    httplib::Error err = httplib::Error::Success;
    const bool sent = c.send(req, res, err);
    std::lock_guard lock(t.mu);
    ++t.requests;
    if (!sent || res.status != 200) {
      ++t.errors;
      if (t.first_error.empty()) t.first_error = sent ? "HTTP " + std::to_string(res.status) : httplib::to_string(err);
      continue;
    }
    if (!done || !finished) ++t.incomplete;
    t.tokens += tokens;
    if (ttft >= 0) t.ttft_s.push_back(ttft);
  }
}

// --burst-ms: the server stays stopped until every client is about to connect, and MS longer.
void resume_after_burst(pid_t server, const std::atomic<int>& ready, const Options& o) {
  while (ready.load() < o.clients) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  std::this_thread::sleep_for(std::chrono::milliseconds(o.burst_ms));
  kill(server, SIGCONT);
}

double percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, size_t(p * double(v.size() - 1) + 0.5))];
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string k = argv[i], v = argv[i + 1];
    if (k == "--zinc") o.zinc = v;
    else if (k == "--model") o.model = v;
    else if (k == "--clients") o.clients = std::stoi(v);
    else if (k == "--parallel") o.parallel = std::stoi(v);
    else if (k == "--seconds") o.seconds = std::stoi(v);
    else if (k == "--max-tokens") o.max_tokens = std::stoi(v);
    else if (k == "--threads") o.threads = std::stoi(v);
    else if (k == "--rounds") o.rounds = std::stoi(v);
    else if (k == "--burst-ms") o.burst_ms = std::stoi(v);
    else {
      std::fprintf(stderr, "usage: zinc_load --zinc BIN --model GGUF [--clients 16] [--parallel 4] [--seconds 60] [--max-tokens 64] [--threads N] [--rounds 1] [--burst-ms 0]\n");
      return 2;
    }
  }
  if (o.model.empty() || access(o.model.c_str(), R_OK) != 0) {
    std::fprintf(stderr, "zinc_load: model '%s' not found: skipped\n", o.model.c_str());
    return 77;
  }
  o.port = free_port();
  const pid_t pid = fork();
  if (pid == 0) {
    const std::string port = std::to_string(o.port), parallel = std::to_string(o.parallel), threads = std::to_string(o.threads);
    if (!freopen("/dev/null", "w", stdout)) _exit(127);
    execl(o.zinc.c_str(), o.zinc.c_str(), "serve", "-m", o.model.c_str(), "--port", port.c_str(), "--parallel", parallel.c_str(),
          "-c", "512", "-t", threads.c_str(), (char*)nullptr);
    std::perror("exec zinc");
    _exit(127);
  }
  httplib::Client probe(o.host, o.port);
  bool up = false;
  for (int i = 0; i < 300 && !up; ++i) {
    auto r = probe.Get("/health");
    up = r && r->status == 200;
    if (!up) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  if (!up) {
    std::fprintf(stderr, "zinc_load: the server did not come up on port %d\n", o.port);
    kill(pid, SIGKILL);
    return 1;
  }
  probe.Post("/v1/completions", R"({"prompt": "Once", "max_tokens": 8})", "application/json");  // warm-up
  const double rss_before = rss_mib(pid);

  // Each round is the same load again: RSS that keeps growing from round to round is a leak; the
  // first round's growth is pages and graphs touched for the first time (bounded by the pool).
  Totals t;
  double elapsed = 0, rss_after = 0;
  for (int round = 0; round < o.rounds; ++round) {
    const auto t0 = Clock::now();
    const auto deadline = t0 + std::chrono::seconds(o.seconds);
    std::vector<std::thread> threads;
    std::atomic<int> ready{0};
    if (o.burst_ms > 0) kill(pid, SIGSTOP);
    for (int i = 0; i < o.clients; ++i) threads.emplace_back(client_loop, std::cref(o), i, deadline, std::ref(ready), std::ref(t));
    if (o.burst_ms > 0) resume_after_burst(pid, ready, o);
    for (auto& th : threads) th.join();
    elapsed += std::chrono::duration<double>(Clock::now() - t0).count();
    std::this_thread::sleep_for(std::chrono::seconds(1));
    rss_after = rss_mib(pid);
    if (o.rounds > 1) std::printf("  round %d: server RSS %.1f MiB\n", round + 1, rss_after);
  }
  auto metrics = probe.Get("/metrics");

  kill(pid, SIGTERM);
  int status = 0;
  waitpid(pid, &status, 0);
  const bool clean = WIFEXITED(status) && WEXITSTATUS(status) == 0;

  std::printf("zinc_load: %d clients, --parallel %d, %.1f s in all: %lld requests, %lld errors, %lld incomplete streams\n", o.clients,
              o.parallel, elapsed, (long long)t.requests, (long long)t.errors, (long long)t.incomplete);
  std::printf("  %lld tokens, %.1f tok/s aggregate; time to first token p50 %.1f ms, p99 %.1f ms\n", (long long)t.tokens,
              double(t.tokens) / elapsed, 1e3 * percentile(t.ttft_s, 0.5), 1e3 * percentile(t.ttft_s, 0.99));
  std::printf("  server RSS %.1f MiB before, %.1f MiB after; shutdown on SIGTERM %s\n", rss_before, rss_after, clean ? "clean" : "FAILED");
  if (metrics && metrics->status == 200) {
    for (const char* name : {"zinc_prompt_tokens_cached_total ", "zinc_prompt_tokens_computed_total ", "zinc_kv_pages_used "}) {
      const size_t at = metrics->body.find(std::string("\n") + name);
      if (at != std::string::npos) std::printf("  %s\n", metrics->body.substr(at + 1, metrics->body.find('\n', at + 1) - at - 1).c_str());
    }
  }
  if (!t.first_error.empty()) std::printf("  first error: %s\n", t.first_error.c_str());
  return t.errors == 0 && t.incomplete == 0 && t.requests > 0 && clean ? 0 : 1;
}
