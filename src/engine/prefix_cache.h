// Token prefixes whose K/V pages outlive their sequence, for reuse by later requests (the system
// prompt another conversation shares, or the previous turn of the same chat). Each entry retains
// its pages in the kv::Cache; lookup finds the longest common prefix; entries are dropped least
// recently used first beyond max_entries, when idle longer than max_idle, or on demand to free
// pages (evict_for). Models with recurrent layers are not cached (their state at the prefix end
// is not snapshotted): the cache stays empty for them. Not thread-safe (the scheduler's worker).
#pragma once

#include <chrono>
#include <cstdint>
#include <list>
#include <span>
#include <vector>

#include "kv/cache.h"

namespace zinc::engine {

class PrefixCache {
 public:
  using Clock = std::chrono::steady_clock;
  PrefixCache(kv::Cache& cache, size_t max_entries = 64, Clock::duration max_idle = std::chrono::minutes(30));
  ~PrefixCache();
  PrefixCache(const PrefixCache&) = delete;
  PrefixCache& operator=(const PrefixCache&) = delete;

  bool enabled() const { return enabled_; }
  // Keeps the first n_tokens of `seq` (tokens[0, n_tokens) are what it holds). Entries that are a
  // prefix of this one are replaced by it.
  void insert(kv::SeqId seq, std::span<const int32_t> tokens, Clock::time_point now = Clock::now());
  // Starts the empty sequence `seq` from the entry sharing the longest prefix with `prompt`,
  // reusing at most max_tokens tokens. Returns the tokens reused (0: none).
  int64_t adopt(kv::SeqId seq, std::span<const int32_t> prompt, int64_t max_tokens, Clock::time_point now = Clock::now());
  // Drops entries (least recently used first) until the pool has `pages` free pages or the cache
  // is empty; returns whether enough pages are free.
  bool evict_for(int64_t pages);
  void drop_idle(Clock::time_point now = Clock::now());
  void clear();
  size_t size() const { return entries_.size(); }

 private:
  struct Entry {
    std::vector<int32_t> tokens;
    std::vector<int32_t> pages;
    Clock::time_point last_used;
  };
  void drop(std::list<Entry>::iterator it);

  kv::Cache& cache_;
  size_t max_entries_;
  Clock::duration max_idle_;
  bool enabled_;
  std::list<Entry> entries_;  // most recently used first
};

}  // namespace zinc::engine
