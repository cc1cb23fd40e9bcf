// The paged KV cache: one pool of 16-token pages shared by all sequences, a page table per
// sequence, K/V stored as f16 (default) or f32, plus one recurrent-state slot per sequence for
// linear-attention layers (conv state + delta-net state, float32). Running out of pages or
// sequence slots is a Status, never a crash. Not thread-safe: one step at a time.
//
// Pages are reference counted so that a cached token prefix can keep its pages after its sequence
// ends (retain_prefix) and later sequences can start from it (adopt_prefix): full pages are
// shared, a partly filled last page is copied, so a sequence only ever writes rows no prefix
// holds. A page returns to the pool when its last holder lets it go. Recurrent state is not part
// of a prefix: whoever adopts one for a model with recurrent layers writes back the state saved
// at its end (engine::PrefixCache).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <vector>

#include "core/status.h"
#include "graph/state.h"

namespace zinc::kv {

using SeqId = int32_t;
constexpr int32_t kPageTokens = 16;

enum class KvType : uint8_t { kF16, kF32 };

struct CacheOptions {
  int64_t n_pages = 0;   // pool size in pages of kPageTokens tokens, shared by all sequences
  int32_t max_seqs = 1;  // sequence slots (ids 0..max_seqs-1), each with its recurrent state
  KvType type = KvType::kF16;
};

// Pages needed for n_tokens tokens.
inline int64_t pages_for(int64_t n_tokens) { return (n_tokens + kPageTokens - 1) / kPageTokens; }

class Cache {
 public:
  static Result<std::unique_ptr<Cache>> create(const graph::StateLayout& layout, const CacheOptions& options);
  ~Cache();
  Cache(const Cache&) = delete;
  Cache& operator=(const Cache&) = delete;

  const graph::StateLayout& layout() const { return layout_; }
  KvType type() const { return options_.type; }
  int64_t n_pages() const { return options_.n_pages; }
  int64_t free_pages() const { return int64_t(free_.size()); }
  int64_t used_pages() const { return options_.n_pages - int64_t(free_.size()); }
  int32_t max_seqs() const { return options_.max_seqs; }
  size_t pool_bytes() const { return page_bytes_ * size_t(options_.n_pages); }  // K/V pool size
  size_t state_bytes() const { return state_floats_ * 4 * size_t(options_.max_seqs); }
  size_t seq_state_floats() const { return state_floats_; }  // one sequence's recurrent state

  // A new empty sequence with zeroed recurrent state; an error when every slot is taken.
  Result<SeqId> add_sequence();
  // Returns the sequence's pages to the pool and frees its slot.
  void remove_sequence(SeqId seq);
  bool has_sequence(SeqId seq) const;
  // Empties a sequence: length 0, pages returned, recurrent state zeroed.
  void clear(SeqId seq);

  int64_t length(SeqId seq) const;    // tokens whose K/V (and state) the cache holds
  int64_t capacity(SeqId seq) const;  // tokens its pages can hold
  // Makes positions [0, n_tokens) of `seq` writable, taking pages from the pool. When the pool is
  // short nothing changes and the error says how many pages were needed and free.
  Status reserve(SeqId seq, int64_t n_tokens);
  // Records that positions [0, n) now hold data (n <= capacity).
  void set_length(SeqId seq, int64_t n);

  // The pages holding positions [0, n_tokens) of `seq` (n_tokens <= length), each with one more
  // reference: they outlive the sequence until release_pages. A live sequence goes on writing
  // its later positions, past n_tokens, into the last of them: rows the prefix does not hold.
  std::vector<int32_t> retain_prefix(SeqId seq, int64_t n_tokens);
  void release_pages(std::span<const int32_t> pages);
  // Starts the empty sequence `seq` from a retained prefix: `pages` hold positions [0, n_tokens)
  // (n_tokens <= pages.size() * kPageTokens). Full pages are shared; the tokens of a partly filled
  // last page are copied to a page of its own (an error when the pool has none). The recurrent
  // state stays zero: the caller restores the one saved at n_tokens.
  Status adopt_prefix(SeqId seq, std::span<const int32_t> pages, int64_t n_tokens);
  int32_t page_refs(int32_t page) const { return refs_[size_t(page)]; }
  // Where K/V live elsewhere (a GPU pool with the same page ids), adopt_prefix copies the rows of
  // a partly filled page through this instead of in host memory.
  using PageCopier = std::function<Status(int32_t src_page, int32_t dst_page, int32_t n_rows)>;
  void set_page_copier(PageCopier copier) { page_copier_ = std::move(copier); }

  // Executor access. Rows are n_head_kv * head_dim elements of type() for `kv_layer`.
  std::span<const int32_t> page_table(SeqId seq) const { return seqs_[size_t(seq)].pages; }
  uint8_t* k_row(int32_t kv_layer, int32_t page, int32_t slot) const {
    return pool_ + size_t(page) * page_bytes_ + k_offset_[size_t(kv_layer)] + size_t(slot) * k_row_bytes_[size_t(kv_layer)];
  }
  uint8_t* v_row(int32_t kv_layer, int32_t page, int32_t slot) const {
    return pool_ + size_t(page) * page_bytes_ + v_offset_[size_t(kv_layer)] + size_t(slot) * v_row_bytes_[size_t(kv_layer)];
  }
  // The K (or V) row of `seq` at `pos` (pos < capacity).
  uint8_t* k_at(int32_t kv_layer, SeqId seq, int64_t pos) const {
    return k_row(kv_layer, seqs_[size_t(seq)].pages[size_t(pos / kPageTokens)], int32_t(pos % kPageTokens));
  }
  uint8_t* v_at(int32_t kv_layer, SeqId seq, int64_t pos) const {
    return v_row(kv_layer, seqs_[size_t(seq)].pages[size_t(pos / kPageTokens)], int32_t(pos % kPageTokens));
  }
  float* conv_state(int32_t recurrent_layer, SeqId seq) const {
    return state_ + size_t(seq) * state_floats_ + conv_offset_[size_t(recurrent_layer)];
  }
  float* ssm_state(int32_t recurrent_layer, SeqId seq) const {
    return state_ + size_t(seq) * state_floats_ + ssm_offset_[size_t(recurrent_layer)];
  }
  // The whole recurrent-state slot of `seq` (empty without recurrent layers): a copy saved at a
  // position and written back later rewinds the sequence's state to that position.
  std::span<float> recurrent_state(SeqId seq) const {
    return state_ ? std::span<float>(state_ + size_t(seq) * state_floats_, state_floats_) : std::span<float>();
  }

 private:
  struct Sequence {
    bool used = false;
    int64_t length = 0;
    std::vector<int32_t> pages;
  };
  Cache() = default;
  void zero_state(SeqId seq);
  int32_t take_page();
  void unref(int32_t page);

  graph::StateLayout layout_;
  CacheOptions options_;
  size_t page_bytes_ = 0;
  std::vector<size_t> k_offset_, v_offset_, k_row_bytes_, v_row_bytes_;
  size_t state_floats_ = 0;  // per sequence
  std::vector<size_t> conv_offset_, ssm_offset_;
  uint8_t* pool_ = nullptr;  // calloc'd: pages are committed by the OS as they are touched
  float* state_ = nullptr;
  std::vector<int32_t> free_;  // free page ids (a stack)
  std::vector<int32_t> refs_;  // holders per page (sequences and retained prefixes)
  std::vector<Sequence> seqs_;
  PageCopier page_copier_;
};

}  // namespace zinc::kv
