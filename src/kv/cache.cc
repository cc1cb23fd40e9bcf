#include "kv/cache.h"

#include <cstdlib>
#include <cstring>

#include "core/check.h"

namespace zinc::kv {

Result<std::unique_ptr<Cache>> Cache::create(const graph::StateLayout& layout, const CacheOptions& options) {
  if (options.max_seqs <= 0) return error("the KV cache needs at least one sequence slot (max_seqs = %d)", options.max_seqs);
  if (options.n_pages < 0 || options.n_pages > INT32_MAX)
    return error("KV cache page count %lld is out of range", (long long)options.n_pages);
  std::unique_ptr<Cache> c(new Cache());
  c->layout_ = layout;
  c->options_ = options;
  const size_t elt = options.type == KvType::kF16 ? 2 : 4;
  for (const auto& l : layout.kv_layers) {
    c->k_row_bytes_.push_back(size_t(l.k_row_elems()) * elt);
    c->v_row_bytes_.push_back(size_t(l.v_row_elems()) * elt);
    c->k_offset_.push_back(c->page_bytes_);
    c->page_bytes_ += c->k_row_bytes_.back() * kPageTokens;
    c->v_offset_.push_back(c->page_bytes_);
    c->page_bytes_ += c->v_row_bytes_.back() * kPageTokens;
  }
  for (const auto& r : layout.recurrent_layers) {
    c->conv_offset_.push_back(c->state_floats_);
    c->state_floats_ += size_t(r.conv_floats);
    c->ssm_offset_.push_back(c->state_floats_);
    c->state_floats_ += size_t(r.ssm_floats);
  }
  if (c->page_bytes_ > 0 && options.n_pages > 0) {
    c->pool_ = static_cast<uint8_t*>(std::calloc(size_t(options.n_pages), c->page_bytes_));
    if (!c->pool_)
      return error("cannot allocate the KV cache: %lld pages of %zu bytes", (long long)options.n_pages, c->page_bytes_);
  }
  if (c->state_floats_ > 0) {
    c->state_ = static_cast<float*>(std::calloc(size_t(options.max_seqs) * c->state_floats_, 4));
    if (!c->state_)
      return error("cannot allocate recurrent state: %d sequences of %zu floats", options.max_seqs, c->state_floats_);
  }
  c->free_.reserve(size_t(options.n_pages));
  for (int64_t p = options.n_pages - 1; p >= 0; --p) c->free_.push_back(int32_t(p));
  c->refs_.assign(size_t(options.n_pages), 0);
  c->seqs_.resize(size_t(options.max_seqs));
  return c;
}

Cache::~Cache() {
  std::free(pool_);
  std::free(state_);
}

Result<SeqId> Cache::add_sequence() {
  for (size_t i = 0; i < seqs_.size(); ++i) {
    if (seqs_[i].used) continue;
    seqs_[i].used = true;
    seqs_[i].length = 0;
    seqs_[i].pages.clear();
    seqs_[i].pages.reserve(size_t(options_.n_pages));
    zero_state(SeqId(i));
    return SeqId(i);
  }
  return error("all %d sequence slots of the KV cache are in use", options_.max_seqs);
}

bool Cache::has_sequence(SeqId seq) const { return seq >= 0 && size_t(seq) < seqs_.size() && seqs_[size_t(seq)].used; }

void Cache::clear(SeqId seq) {
  ZINC_CHECK(has_sequence(seq));
  Sequence& s = seqs_[size_t(seq)];
  for (auto it = s.pages.rbegin(); it != s.pages.rend(); ++it) unref(*it);
  s.pages.clear();
  s.length = 0;
  zero_state(seq);
}

void Cache::remove_sequence(SeqId seq) {
  clear(seq);
  seqs_[size_t(seq)].used = false;
}

int64_t Cache::length(SeqId seq) const {
  ZINC_CHECK(has_sequence(seq));
  return seqs_[size_t(seq)].length;
}

int64_t Cache::capacity(SeqId seq) const {
  ZINC_CHECK(has_sequence(seq));
  return int64_t(seqs_[size_t(seq)].pages.size()) * kPageTokens;
}

Status Cache::reserve(SeqId seq, int64_t n_tokens) {
  ZINC_CHECK(has_sequence(seq));
  Sequence& s = seqs_[size_t(seq)];
  const int64_t need = pages_for(n_tokens) - int64_t(s.pages.size());
  if (need <= 0) return ok_status();
  if (need > int64_t(free_.size()))
    return error("KV cache full: sequence %d needs %lld more pages of %d tokens for %lld tokens, %zu of %lld are free",
                 seq, (long long)need, kPageTokens, (long long)n_tokens, free_.size(), (long long)options_.n_pages);
  for (int64_t i = 0; i < need; ++i) s.pages.push_back(take_page());
  return ok_status();
}

int32_t Cache::take_page() {
  ZINC_CHECK(!free_.empty());
  const int32_t p = free_.back();
  free_.pop_back();
  refs_[size_t(p)] = 1;
  return p;
}

void Cache::unref(int32_t page) {
  ZINC_CHECK(page >= 0 && page < int32_t(refs_.size()) && refs_[size_t(page)] > 0);
  if (--refs_[size_t(page)] == 0) free_.push_back(page);
}

std::vector<int32_t> Cache::retain_prefix(SeqId seq, int64_t n_tokens) {
  ZINC_CHECK(has_sequence(seq) && n_tokens >= 0 && n_tokens <= length(seq));
  const Sequence& s = seqs_[size_t(seq)];
  std::vector<int32_t> pages(s.pages.begin(), s.pages.begin() + pages_for(n_tokens));
  for (int32_t p : pages) ++refs_[size_t(p)];
  return pages;
}

void Cache::release_pages(std::span<const int32_t> pages) {
  for (int32_t p : pages) unref(p);
}

Status Cache::adopt_prefix(SeqId seq, std::span<const int32_t> pages, int64_t n_tokens) {
  ZINC_CHECK(has_sequence(seq) && length(seq) == 0 && capacity(seq) == 0);
  ZINC_CHECK(n_tokens >= 0 && n_tokens <= int64_t(pages.size()) * kPageTokens);
  const int64_t n_full = n_tokens / kPageTokens, rest = n_tokens % kPageTokens;
  if (rest > 0 && free_.empty())
    return error("KV cache full: no free page to copy the last %lld tokens of a cached prefix", (long long)rest);
  Sequence& s = seqs_[size_t(seq)];
  for (int64_t i = 0; i < n_full; ++i) {
    s.pages.push_back(pages[size_t(i)]);
    ++refs_[size_t(pages[size_t(i)])];
  }
  if (rest > 0) {
    const int32_t src = pages[size_t(n_full)], dst = take_page();
    for (size_t l = 0; l < k_offset_.size(); ++l) {
      std::memcpy(k_row(int32_t(l), dst, 0), k_row(int32_t(l), src, 0), k_row_bytes_[l] * size_t(rest));
      std::memcpy(v_row(int32_t(l), dst, 0), v_row(int32_t(l), src, 0), v_row_bytes_[l] * size_t(rest));
    }
    s.pages.push_back(dst);
  }
  s.length = n_tokens;
  return ok_status();
}

void Cache::set_length(SeqId seq, int64_t n) {
  ZINC_CHECK(n >= 0 && n <= capacity(seq));
  seqs_[size_t(seq)].length = n;
}

void Cache::zero_state(SeqId seq) {
  if (state_) std::memset(state_ + size_t(seq) * state_floats_, 0, state_floats_ * 4);
}

}  // namespace zinc::kv
