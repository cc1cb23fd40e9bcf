#include "engine/prefix_cache.h"

#include <algorithm>

namespace zinc::engine {

PrefixCache::PrefixCache(kv::Cache& cache, size_t max_entries, Clock::duration max_idle)
    : cache_(cache), max_entries_(max_entries), max_idle_(max_idle), enabled_(cache.layout().recurrent_layers.empty()) {}

PrefixCache::~PrefixCache() { clear(); }

void PrefixCache::drop(std::list<Entry>::iterator it) {
  cache_.release_pages(it->pages);
  entries_.erase(it);
}

void PrefixCache::clear() {
  while (!entries_.empty()) drop(entries_.begin());
}

void PrefixCache::insert(kv::SeqId seq, std::span<const int32_t> tokens, Clock::time_point now) {
  if (!enabled_ || tokens.empty() || max_entries_ == 0) return;
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

int64_t PrefixCache::adopt(kv::SeqId seq, std::span<const int32_t> prompt, int64_t max_tokens, Clock::time_point now) {
  if (!enabled_) return 0;
  drop_idle(now);
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

bool PrefixCache::evict_for(int64_t pages) {
  while (cache_.free_pages() < pages && !entries_.empty()) drop(std::prev(entries_.end()));
  return cache_.free_pages() >= pages;
}

void PrefixCache::drop_idle(Clock::time_point now) {
  while (!entries_.empty() && now - entries_.back().last_used > max_idle_) drop(std::prev(entries_.end()));
}

}  // namespace zinc::engine
