// Token prefixes whose K/V pages outlive their sequence, for reuse by later requests (the system
// prompt another conversation shares, or the previous turn of the same chat). Each entry retains
// its pages in the kv::Cache; lookup finds the longest common prefix; entries are dropped least
// recently used first beyond max_entries, when idle longer than max_idle, or on demand to free
// pages (evict_for). Not thread-safe (the scheduler's worker).
//
// Models with recurrent layers cannot rewind their state token by token, so their entries are
// snapshots: the tokens a sequence holds when inserted, its pages and its recurrent state there
// (read through StateIo). A later prompt adopts the longest entry that is wholly a prefix of it,
// and the state is written back. Snapshots are large (a Qwen3.5-35B's is 63 MB), so their total
// is kept under max_state_bytes, and an entry does not replace the shorter ones it extends.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <list>
#include <span>
#include <vector>

#include "core/status.h"
#include "kv/cache.h"

namespace zinc::engine {

class PrefixCache {
 public:
  using Clock = std::chrono::steady_clock;
  static constexpr size_t kDefaultStateBytes = size_t(2048) << 20;
  PrefixCache(kv::Cache& cache, size_t max_entries = 64, Clock::duration max_idle = std::chrono::minutes(30),
              size_t max_state_bytes = kDefaultStateBytes);
  ~PrefixCache();
  PrefixCache(const PrefixCache&) = delete;
  PrefixCache& operator=(const PrefixCache&) = delete;

  // How a sequence's recurrent state is read and written back: kv::Cache's host slot unless set
  // (the Runner's, which reaches the device where the state lives on Vulkan).
  struct StateIo {
    std::function<Result<std::vector<float>>(kv::SeqId)> save;
    std::function<Status(kv::SeqId, std::span<const float>)> restore;
  };
  void set_state_io(StateIo io) { io_ = std::move(io); }

  // False when nothing can be cached: a recurrent model whose snapshot exceeds max_state_bytes.
  bool enabled() const { return enabled_; }
  bool snapshots_state() const { return recurrent_; }
  // Keeps the first n_tokens of `seq` (tokens[0, n_tokens) are what it holds). Entries that are a
  // prefix of this one are replaced by it. With recurrent layers, n_tokens must be the sequence's
  // length (the state is saved as it is now); a state that cannot be read is not cached.
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
  size_t state_bytes() const { return state_bytes_; }  // of the snapshots held

 private:
  struct Entry {
    std::vector<int32_t> tokens;
    std::vector<int32_t> pages;
    std::vector<float> state;  // recurrent layers: the state after `tokens`
    Clock::time_point last_used;
  };
  void drop(std::list<Entry>::iterator it);
  void insert_snapshot(kv::SeqId seq, std::span<const int32_t> tokens, Clock::time_point now);
  int64_t adopt_snapshot(kv::SeqId seq, std::span<const int32_t> prompt, int64_t max_tokens, Clock::time_point now);

  kv::Cache& cache_;
  size_t max_entries_;
  Clock::duration max_idle_;
  size_t max_state_bytes_;
  bool recurrent_;
  bool enabled_;
  StateIo io_;
  size_t state_bytes_ = 0;
  std::list<Entry> entries_;  // most recently used first
};

}  // namespace zinc::engine
