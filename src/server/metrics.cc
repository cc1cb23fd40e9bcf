#include "server/metrics.h"

#include <cstdio>

namespace zinc::server {

Histogram::Histogram(std::vector<double> bounds_seconds) : bounds_(std::move(bounds_seconds)), counts_(bounds_.size() + 1, 0) {}

void Histogram::observe(double seconds) {
  size_t i = 0;
  while (i < bounds_.size() && seconds > bounds_[i]) ++i;
  ++counts_[i];
  sum_ += seconds;
  ++count_;
}

void Histogram::render(const std::string& name, const std::string& help, std::string& out) const {
  char line[256];
  out += "# HELP " + name + " " + help + "\n# TYPE " + name + " histogram\n";
  uint64_t cum = 0;
  for (size_t i = 0; i <= bounds_.size(); ++i) {
    cum += counts_[i];
    if (i < bounds_.size()) std::snprintf(line, sizeof line, "%s_bucket{le=\"%g\"} %llu\n", name.c_str(), bounds_[i], (unsigned long long)cum);
    else std::snprintf(line, sizeof line, "%s_bucket{le=\"+Inf\"} %llu\n", name.c_str(), (unsigned long long)cum);
    out += line;
  }
  std::snprintf(line, sizeof line, "%s_sum %.6f\n%s_count %llu\n", name.c_str(), sum_, name.c_str(), (unsigned long long)count_);
  out += line;
}

Metrics::Metrics()
    : ttft_({0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30}),
      per_token_({0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1}) {}

void Metrics::request(const std::string& endpoint, int status) {
  std::lock_guard lock(mu_);
  const std::string key = endpoint + "\x1f" + std::to_string(status);
  for (auto& [k, n] : requests_)
    if (k == key) {
      ++n;
      return;
    }
  requests_.emplace_back(key, 1);
}

void Metrics::tokens(int64_t prompt, int64_t completion) {
  std::lock_guard lock(mu_);
  prompt_tokens_ += prompt;
  completion_tokens_ += completion;
}

void Metrics::time_to_first_token(double seconds) {
  std::lock_guard lock(mu_);
  ttft_.observe(seconds);
}

void Metrics::time_per_token(double seconds) {
  std::lock_guard lock(mu_);
  per_token_.observe(seconds);
}

std::string Metrics::render(const engine::SchedulerStats& s) const {
  std::lock_guard lock(mu_);
  std::string out;
  char line[256];
  out += "# HELP zinc_requests_total HTTP requests by endpoint and status.\n# TYPE zinc_requests_total counter\n";
  for (const auto& [k, n] : requests_) {
    const size_t sep = k.find('\x1f');
    std::snprintf(line, sizeof line, "zinc_requests_total{endpoint=\"%s\",status=\"%s\"} %llu\n", k.substr(0, sep).c_str(),
                  k.substr(sep + 1).c_str(), (unsigned long long)n);
    out += line;
  }
  auto metric = [&](const char* name, const char* type, const char* help, long long v) {
    std::snprintf(line, sizeof line, "# HELP %s %s\n# TYPE %s %s\n%s %lld\n", name, help, name, type, name, v);
    out += line;
  };
  metric("zinc_prompt_tokens_total", "counter", "Prompt tokens of finished requests.", prompt_tokens_);
  metric("zinc_completion_tokens_total", "counter", "Generated tokens of finished requests.", completion_tokens_);
  metric("zinc_prompt_tokens_cached_total", "counter", "Prompt tokens reused from the prefix cache.", s.prompt_tokens_cached);
  metric("zinc_prompt_tokens_computed_total", "counter", "Prompt tokens prefilled.", s.prompt_tokens_computed);
  metric("zinc_kv_pages_used", "gauge", "KV cache pages in use (sequences and cached prefixes).", s.kv_pages_used);
  metric("zinc_kv_pages_total", "gauge", "KV cache pages in the pool.", s.kv_pages_total);
  metric("zinc_queue_depth", "gauge", "Requests waiting for a sequence slot.", s.queue_depth);
  metric("zinc_active_sequences", "gauge", "Sequences being prefilled or decoded.", s.active);
  metric("zinc_cached_prefixes", "gauge", "Token prefixes kept for reuse.", s.cached_prefixes);
  metric("zinc_decode_steps_total", "counter", "Batched runner steps.", s.steps);
  ttft_.render("zinc_time_to_first_token_seconds", "Time from request to its first generated token.", out);
  per_token_.render("zinc_time_per_output_token_seconds", "Time between generated tokens of a request.", out);
  return out;
}

}  // namespace zinc::server
