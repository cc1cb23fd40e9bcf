#include "cpu/matmul.h"

#include <algorithm>

#include "core/check.h"
#include "core/quant.h"

namespace zinc::cpu {
namespace {

using kernels::ActGroup;
using kernels::KernelTable;
using kernels::WeightGroup;
using kernels::WeightRows;

// Prefill blocking: one K block of the activations of one token block stays in L2 while every
// panel of weight rows passes over it; a panel (kernel rows x K block) stays in L1/L2.
constexpr int64_t kActBlockBytes = 384 * 1024;
constexpr int64_t kMaxTokenBlock = 128;
constexpr int64_t kPanelGroups = 128;             // decoded groups per panel (48 KiB)
constexpr int64_t kFloatChunkBytes = 256 * 1024;  // float weight rows per work item (L2)

// Each thread's decoded panel: static thread storage, so that no thread ever allocates it (a
// worker may take its first work item at any call).
thread_local WeightGroup t_panel[kPanelGroups];

// Per-thread buffers, grown on demand and kept (no allocation once warm).
struct Scratch {
  std::vector<float> row;  // dequantized row (fallback path)
  // Built by the calling thread and read by all threads during one call:
  std::vector<const ActGroup*> act;
  std::vector<const float*> xf;
  std::vector<float*> y;
  std::vector<int32_t> order, expert_start;
  struct Item {
    int32_t matrix;  // index of the output (matmul_many) or the expert (matmul_experts)
    int64_t r0, r1;
  };
  std::vector<Item> items;
};

Scratch& scratch() {
  thread_local Scratch s;
  return s;
}

template <class T>
void ensure_size(std::vector<T>& v, size_t n) {
  if (v.size() < n) v.resize(n);
}

const KernelTable& table_for(Isa isa) {
  const KernelTable* kt = kernels::kernel_table(isa);
  ZINC_CHECK(kt != nullptr && cpu_supports(isa));
  return *kt;
}

WeightRows rows_of(const WeightView& w, const void* data) {
  return {w.type, static_cast<const uint8_t*>(data), w.row_stride_bytes, w.cols};
}

// Asks for groups [g0, g0 + n_groups) of rows [r0, r0 + n_rows) to be brought into the cache.
void prefetch_groups(const WeightRows& w, int64_t r0, int64_t n_rows, int64_t g0, int64_t n_groups) {
  const int64_t gb = kernels::group_bytes(w.type);
  const int64_t row_end = int64_t(row_bytes(w.type, w.cols));
  for (int64_t r = r0; r < r0 + n_rows; ++r) {
    const uint8_t* row = w.data + size_t(r) * w.row_stride_bytes;
    const int64_t end = std::min(row_end, (g0 + n_groups) * gb);
    for (int64_t off = g0 * gb; off < end; off += 64) __builtin_prefetch(row + off);
  }
}

// Rows [r0, r1) of a quantized matrix for n_tok tokens: the fused matrix-vector kernel for a
// few tokens, else the blocked panel GEMM.
void quantized_rows(const KernelTable& kt, const WeightRows& w, int64_t r0, int64_t r1, const ActGroup* const* act,
                    int64_t n_tok, float* const* y) {
  const int type = int(w.type);
  if (n_tok <= kernels::kMaxGemvTokens) {
    kt.gemv[type](w, r0, r1, act, int(n_tok), y);
    return;
  }
  const int64_t n_groups = (w.cols + kernels::kGroupElems - 1) / kernels::kGroupElems;
  const int panel_rows = kt.panel_rows;
  const int64_t tb_max = std::min(n_tok, kMaxTokenBlock);
  const int64_t kc = std::clamp<int64_t>(kActBlockBytes / (tb_max * int64_t(sizeof(ActGroup))), 1,
                                         std::min(n_groups, kPanelGroups / panel_rows));
  const ActGroup* tile_act[kMaxTokenBlock];
  const auto gemm = kt.gemm_panel[kernels::is_wide_type(w.type) ? 1 : 0];
  for (int64_t tb = 0; tb < n_tok; tb += tb_max) {
    const int n_tb = int(std::min(tb_max, n_tok - tb));
    for (int64_t kb = 0; kb < n_groups; kb += kc) {
      const int64_t n_kc = std::min(kc, n_groups - kb);
      for (int t = 0; t < n_tb; ++t) tile_act[t] = act[tb + t] + kb;
      // The weights come from DRAM and the products leave the memory idle: keep the panels two
      // ahead on their way into the cache.
      prefetch_groups(w, r0 + panel_rows, std::min<int64_t>(panel_rows, r1 - r0 - panel_rows), kb, n_kc);
      for (int64_t r = r0; r < r1; r += panel_rows) {
        const int n_rows = int(std::min<int64_t>(panel_rows, r1 - r));
        kt.unpack[type](w, r, n_rows, kb, n_kc, t_panel);
        prefetch_groups(w, r + 2 * panel_rows, std::min<int64_t>(panel_rows, r1 - r - 2 * panel_rows), kb, n_kc);
        gemm(t_panel, n_rows, n_kc, tile_act, n_tb, y + tb, r, kb > 0);
      }
    }
  }
}

// Types without a kernel: dequantize each row, then float dot products.
void fallback_rows(const WeightRows& w, int64_t r0, int64_t r1, const float* const* x, int64_t n_tok, float* const* y) {
  Scratch& s = scratch();
  ensure_size(s.row, size_t(w.cols));
  for (int64_t r = r0; r < r1; ++r) {
    dequantize_row(w.type, w.data + size_t(r) * w.row_stride_bytes, s.row.data(), w.cols);
    for (int64_t t = 0; t < n_tok; ++t) {
      double acc = 0;
      for (int64_t k = 0; k < w.cols; ++k) acc += double(s.row[k]) * x[t][k];
      y[t][r] = float(acc);
    }
  }
}

// Rows per work item: enough items to balance the threads, rows a multiple of `align`.
int64_t row_chunk(int64_t rows, int n_threads, int64_t align, int64_t max_rows) {
  int64_t chunk = (rows + 4 * n_threads - 1) / (4 * n_threads);
  chunk = std::clamp<int64_t>(chunk, 1, max_rows);
  return (chunk + align - 1) / align * align;
}

void check_shape(const WeightView& w, int64_t x_cols) {
  ZINC_CHECK(has_matmul_kernel(w.type) || can_dequantize(w.type));
  ZINC_CHECK(w.cols == x_cols);
  ZINC_CHECK(w.rows >= 0 && w.cols > 0);
  const auto& info = type_info(w.type);
  ZINC_CHECK(w.cols % info.block_elems == 0);
  ZINC_CHECK(w.row_stride_bytes >= row_bytes(w.type, w.cols));
}

// The rows [r0, r1) of one matrix for the tokens given by pointers (act for quantized types,
// xf for float ones), whatever the weight type.
void any_rows(const KernelTable& kt, const WeightRows& w, int64_t r0, int64_t r1, const ActGroup* const* act,
              const float* const* xf, int64_t n_tok, float* const* y) {
  if (kernels::is_quantized_kernel_type(w.type)) {
    quantized_rows(kt, w, r0, r1, act, n_tok, y);
  } else if (auto f = kt.gemm_float[int(w.type)]) {
    for (int64_t t = 0; t < n_tok; t += kMaxTokenBlock)
      f(w, r0, r1, xf + t, int(std::min(kMaxTokenBlock, n_tok - t)), y + t);
  } else {
    fallback_rows(w, r0, r1, xf, n_tok, y);
  }
}

int64_t chunk_rows_for(const KernelTable& kt, const WeightView& w, int64_t n_tok, int n_threads) {
  if (kernels::is_quantized_kernel_type(w.type)) {
    const int64_t max_rows = n_tok <= kernels::kMaxGemvTokens ? (int64_t(1) << 40) : 64;
    return row_chunk(w.rows, n_threads, n_tok <= kernels::kMaxGemvTokens ? 16 : kt.panel_rows, max_rows);
  }
  const int64_t max_rows = std::max<int64_t>(1, kFloatChunkBytes / int64_t(row_bytes(w.type, w.cols)));
  return row_chunk(w.rows, n_threads, 4, max_rows);
}

}  // namespace

bool has_matmul_kernel(TensorType t) {
  return kernels::is_quantized_kernel_type(t) || t == TensorType::F32 || t == TensorType::F16 || t == TensorType::BF16;
}

void MatmulInput::reset(const float* x, int64_t n_tokens, int64_t cols) {
  x_ = x;
  n_tokens_ = n_tokens;
  cols_ = cols;
  quantized_by_ = nullptr;
}

const ActGroup* MatmulInput::quantized(const KernelTable& kt, ThreadPool& pool) {
  if (quantized_by_ == &kt) return q_.data();
  ZINC_CHECK(cols_ % 32 == 0);
  const int64_t n_groups = this->n_groups();
  ensure_size(q_, size_t(n_tokens_ * n_groups));
  auto quantize = [&](int64_t begin, int64_t end) {
    for (int64_t t = begin; t < end; ++t) kt.quantize_row(x_ + t * cols_, cols_, q_.data() + t * n_groups);
  };
  constexpr int64_t kTokensPerItem = 4;
  pool.parallel_items((n_tokens_ + kTokensPerItem - 1) / kTokensPerItem,
                      [&](int64_t i) { quantize(i * kTokensPerItem, std::min(n_tokens_, (i + 1) * kTokensPerItem)); });
  quantized_by_ = &kt;
  return q_.data();
}

void matmul_many(const MatmulOutput* outs, int n_outs, MatmulInput& x, ThreadPool& pool, Isa isa) {
  const int64_t n_tok = x.n_tokens();
  if (n_tok == 0 || n_outs == 0) return;
  const KernelTable& kt = table_for(isa);
  Scratch& s = scratch();
  bool quantized = false, floats = false;
  for (int o = 0; o < n_outs; ++o) {
    check_shape(outs[o].w, x.cols());
    (kernels::is_quantized_kernel_type(outs[o].w.type) ? quantized : floats) = true;
  }
  if (quantized) {
    const ActGroup* q = x.quantized(kt, pool);
    ensure_size(s.act, size_t(n_tok));
    for (int64_t t = 0; t < n_tok; ++t) s.act[t] = q + t * x.n_groups();
  }
  if (floats) {
    ensure_size(s.xf, size_t(n_tok));
    for (int64_t t = 0; t < n_tok; ++t) s.xf[t] = x.x() + t * x.cols();
  }
  // Output rows of every matrix, and work items (matrix, row chunk) over all of them.
  ensure_size(s.y, size_t(n_outs * n_tok));
  s.items.clear();
  for (int o = 0; o < n_outs; ++o) {
    const WeightView& w = outs[o].w;
    for (int64_t t = 0; t < n_tok; ++t) s.y[o * n_tok + t] = outs[o].y + t * w.rows;
    const int64_t chunk = chunk_rows_for(kt, w, n_tok, pool.size());
    for (int64_t r = 0; r < w.rows; r += chunk) s.items.push_back({o, r, std::min(w.rows, r + chunk)});
  }
  const Scratch* shared = &s;
  pool.parallel_items(int64_t(s.items.size()), [&](int64_t i) {
    const Scratch::Item& it = shared->items[size_t(i)];
    const WeightView& w = outs[it.matrix].w;
    any_rows(kt, rows_of(w, w.data), it.r0, it.r1, shared->act.data(), shared->xf.data(), n_tok,
             shared->y.data() + it.matrix * n_tok);
  });
}

void matmul(const WeightView& w, MatmulInput& x, float* y, ThreadPool& pool, Isa isa) {
  const MatmulOutput out{w, y};
  matmul_many(&out, 1, x, pool, isa);
}

void matmul(const WeightView& w, const float* x, int64_t n_tokens, float* y, ThreadPool& pool) {
  thread_local MatmulInput input;
  input.reset(x, n_tokens, w.cols);
  matmul(w, input, y, pool);
  input.reset(nullptr, 0, 0);
}

void matmul_experts(const ExpertWeights& ew, MatmulInput& x, const int32_t* expert_ids, const int32_t* token_ids,
                    int64_t n_pairs, float* y, ThreadPool& pool, Isa isa) {
  const WeightView& w = ew.w;
  check_shape(w, x.cols());
  if (n_pairs == 0 || w.rows == 0) return;
  const KernelTable& kt = table_for(isa);
  Scratch& s = scratch();
  // Pairs sorted by expert (counting sort): expert e owns order[expert_start[e] .. expert_start[e+1]).
  s.expert_start.assign(size_t(ew.n_experts + 1), 0);
  for (int64_t p = 0; p < n_pairs; ++p) {
    ZINC_CHECK(expert_ids[p] >= 0 && expert_ids[p] < ew.n_experts);
    ZINC_CHECK(token_ids[p] >= 0 && token_ids[p] < x.n_tokens());
    s.expert_start[expert_ids[p] + 1]++;
  }
  for (int64_t e = 0; e < ew.n_experts; ++e) s.expert_start[e + 1] += s.expert_start[e];
  ensure_size(s.order, size_t(n_pairs));
  ensure_size(s.y, size_t(n_pairs));
  ensure_size(s.act, size_t(n_pairs));
  ensure_size(s.xf, size_t(n_pairs));
  const bool quantized = kernels::is_quantized_kernel_type(w.type);
  const ActGroup* q = quantized ? x.quantized(kt, pool) : nullptr;
  // Stable placement: each pair goes to its expert's next free slot (expert_start[e] advances).
  for (int64_t p = 0; p < n_pairs; ++p) {
    const int32_t slot = s.expert_start[expert_ids[p]]++;
    s.order[slot] = int32_t(p);
  }
  // expert_start[e] is now the end of expert e: shift back to starts.
  for (int64_t e = ew.n_experts; e > 0; --e) s.expert_start[e] = s.expert_start[e - 1];
  s.expert_start[0] = 0;
  for (int64_t k = 0; k < n_pairs; ++k) {
    const int32_t p = s.order[k];
    s.y[k] = y + int64_t(p) * w.rows;
    if (quantized) {
      s.act[k] = q + int64_t(token_ids[p]) * x.n_groups();
    } else {
      s.xf[k] = x.x() + int64_t(token_ids[p]) * x.cols();
    }
  }
  // Work items: (expert, row chunk) for every expert with tokens.
  s.items.clear();
  for (int32_t e = 0; e < ew.n_experts; ++e) {
    const int64_t n_tok = s.expert_start[e + 1] - s.expert_start[e];
    if (n_tok == 0) continue;
    const int64_t chunk = chunk_rows_for(kt, w, n_tok, pool.size());
    for (int64_t r = 0; r < w.rows; r += chunk) s.items.push_back({e, r, std::min(w.rows, r + chunk)});
  }
  const Scratch* shared = &s;
  pool.parallel_items(int64_t(s.items.size()), [&](int64_t i) {
    const Scratch::Item& it = shared->items[i];
    const int64_t begin = shared->expert_start[it.matrix], n_tok = shared->expert_start[it.matrix + 1] - begin;
    const WeightRows wr = rows_of(w, static_cast<const uint8_t*>(w.data) + size_t(it.matrix) * ew.expert_stride_bytes);
    any_rows(kt, wr, it.r0, it.r1, shared->act.data() + begin, shared->xf.data() + begin, n_tok,
             shared->y.data() + begin);
  });
}

}  // namespace zinc::cpu
