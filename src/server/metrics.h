// Server counters and latency histograms, rendered as Prometheus text (with the scheduler's
// gauges) for GET /metrics. Thread-safe.
#pragma once

#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#include "engine/scheduler.h"

namespace zinc::server {

class Histogram {
 public:
  explicit Histogram(std::vector<double> bounds_seconds);
  void observe(double seconds);
  // Appends the _bucket/_sum/_count lines of `name`.
  void render(const std::string& name, const std::string& help, std::string& out) const;

 private:
  std::vector<double> bounds_;
  std::vector<uint64_t> counts_;  // per bucket (not cumulative), +Inf last
  double sum_ = 0;
  uint64_t count_ = 0;
};

class Metrics {
 public:
  Metrics();
  void request(const std::string& endpoint, int status);
  void tokens(int64_t prompt, int64_t completion);
  void time_to_first_token(double seconds);
  void time_per_token(double seconds);
  std::string render(const engine::SchedulerStats& s) const;

 private:
  mutable std::mutex mu_;
  std::vector<std::pair<std::string, uint64_t>> requests_;  // "endpoint\x1fstatus" → count
  int64_t prompt_tokens_ = 0, completion_tokens_ = 0;
  Histogram ttft_, per_token_;
};

}  // namespace zinc::server
