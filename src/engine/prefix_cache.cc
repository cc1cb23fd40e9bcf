#include "engine/prefix_cache.h"

#include <algorithm>

#include "core/check.h"

namespace zinc::engine {

PrefixCache::PrefixCache(kv::Cache& cache, size_t max_entries, Clock::duration max_idle, size_t max_state_bytes)
    : cache_(cache),
      max_entries_(max_entries),
      max_idle_(max_idle),
      max_state_bytes_(max_state_bytes),
      recurrent_(cache.seq_state_floats() > 0),
      enabled_(!recurrent_ || cache.seq_state_floats() * sizeof(float) <= max_state_bytes) {}

PrefixCache::~PrefixCache() { clear(); }

void PrefixCache::drop(std::list<Entry>::iterator it) {
  cache_.release_pages(it->pages);
  state_bytes_ -= it->state.size() * sizeof(float);
  entries_.erase(it);
}

void PrefixCache::clear() {
  while (!entries_.empty()) drop(entries_.begin());
}

void PrefixCache::insert(kv::SeqId seq, std::span<const int32_t> tokens, Clock::time_point now) {
  if (!enabled_ || tokens.empty() || max_entries_ == 0) return;
  if (recurrent_) return insert_snapshot(seq, tokens, now);
  for (auto it = entries_.begin(); it != entries_.end();) {
    const auto& t = it->tokens;
    if (t.size() <= tokens.size() && std::equal(t.begin(), t.end(), tokens.begin())) {
      it = (drop(it), entries_.begin());  // restart: drop invalidated `it`
      continue;
    }
    if (t.size() > tokens.size() && std::equal(tokens.begin(), tokens.end(), t.begin())) {
      it->last_used = now;  // a longer entry already covers this one
      entries_.splice(entries_.begin(), entries_, it);
      return;
    }
    ++it;
  }
  Entry e;
  e.tokens.assign(tokens.begin(), tokens.end());
  e.pages = cache_.retain_prefix(seq, int64_t(tokens.size()));
  e.last_used = now;
  entries_.push_front(std::move(e));
  while (entries_.size() > max_entries_) drop(std::prev(entries_.end()));
}

void PrefixCache::insert_snapshot(kv::SeqId seq, std::span<const int32_t> tokens, Clock::time_point now) {
  ZINC_CHECK(int64_t(tokens.size()) == cache_.length(seq));
  for (auto it = entries_.begin(); it != entries_.end(); ++it)
    if (std::ranges::equal(it->tokens, tokens)) {  // the same state again
      it->last_used = now;
      entries_.splice(entries_.begin(), entries_, it);
      return;
    }
  Entry e;
  if (io_.save) {
    auto state = io_.save(seq);
    if (!state.ok()) return;
    e.state = std::move(*state);
  } else {
    const std::span<const float> state = cache_.recurrent_state(seq);
    e.state.assign(state.begin(), state.end());
  }
  const size_t bytes = e.state.size() * sizeof(float);
  while (!entries_.empty() && (state_bytes_ + bytes > max_state_bytes_ || entries_.size() >= max_entries_))
    drop(std::prev(entries_.end()));
  e.tokens.assign(tokens.begin(), tokens.end());
  e.pages = cache_.retain_prefix(seq, int64_t(tokens.size()));
  e.last_used = now;
  state_bytes_ += bytes;
  entries_.push_front(std::move(e));
}

int64_t PrefixCache::adopt(kv::SeqId seq, std::span<const int32_t> prompt, int64_t max_tokens, Clock::time_point now) {
  if (!enabled_) return 0;
  drop_idle(now);
  if (recurrent_) return adopt_snapshot(seq, prompt, max_tokens, now);
  auto best = entries_.end();
  int64_t best_n = 0;
  for (auto it = entries_.begin(); it != entries_.end(); ++it) {
    const size_t n = std::min(it->tokens.size(), prompt.size());
    const auto mismatch = std::mismatch(it->tokens.begin(), it->tokens.begin() + long(n), prompt.begin());
    const int64_t common = int64_t(mismatch.first - it->tokens.begin());
    if (common > best_n) {
      best_n = common;
      best = it;
    }
  }
  best_n = std::min(best_n, max_tokens);
  if (best == entries_.end() || best_n <= 0) return 0;
  if (!cache_.adopt_prefix(seq, best->pages, best_n).ok()) return 0;  // no page for the copy
  best->last_used = now;
  entries_.splice(entries_.begin(), entries_, best);
  return best_n;
}

int64_t PrefixCache::adopt_snapshot(kv::SeqId seq, std::span<const int32_t> prompt, int64_t max_tokens,
                                    Clock::time_point now) {
  const size_t limit = size_t(std::clamp<int64_t>(max_tokens, 0, int64_t(prompt.size())));
  auto best = entries_.end();
  for (auto it = entries_.begin(); it != entries_.end(); ++it) {
    const auto& t = it->tokens;
    if (t.size() <= limit && (best == entries_.end() || t.size() > best->tokens.size()) &&
        std::equal(t.begin(), t.end(), prompt.begin()))
      best = it;
  }
  if (best == entries_.end()) return 0;
  const int64_t n = int64_t(best->tokens.size());
  if (!cache_.adopt_prefix(seq, best->pages, n).ok()) return 0;
  const Status restored = io_.restore ? io_.restore(seq, best->state) : Status();
  if (!restored.ok()) {
    cache_.clear(seq);
    return 0;
  }
  if (!io_.restore) std::ranges::copy(best->state, cache_.recurrent_state(seq).begin());
  best->last_used = now;
  entries_.splice(entries_.begin(), entries_, best);
  return n;
}

bool PrefixCache::evict_for(int64_t pages) {
  while (cache_.free_pages() < pages && !entries_.empty()) drop(std::prev(entries_.end()));
  return cache_.free_pages() >= pages;
}

void PrefixCache::drop_idle(Clock::time_point now) {
  while (!entries_.empty() && now - entries_.back().last_used > max_idle_) drop(std::prev(entries_.end()));
}

}  // namespace zinc::engine
