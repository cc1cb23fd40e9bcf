#include "vulkan/router_fold.h"

#include <algorithm>
#include <cstring>

#include "core/quant.h"
#include "cpu/thread_pool.h"

namespace zinc::vulkan {
namespace {

// The float rows of a matrix weight.
std::vector<float> dequantize(const graph::Weight& w) {
  std::vector<float> out(size_t(w.rows() * w.cols()));
  const auto* src = static_cast<const uint8_t*>(w.data);
  for (int64_t r = 0; r < w.rows(); ++r) dequantize_row(w.type, src + size_t(r) * w.row_bytes, &out[size_t(r * w.cols())], w.cols());
  return out;
}

}  // namespace

Result<RouterFold> fold_router(const graph::Weight& router, const graph::Weight& norm, const graph::Weight& projection,
                               TensorType input_type) {
  const int64_t n_expert = router.rows(), n_embd = router.cols(), in_cols = projection.cols();
  if (router.ne[2] != 1 || projection.ne[2] != 1 || norm.n_elements() != n_embd || projection.rows() != n_embd ||
      n_expert <= 0 || in_cols <= 0 || in_cols % 32 != 0)
    return error("router %s (%lld x %lld), norm %s (%lld) and projection %s (%lld x %lld) do not fold",
                 router.name.c_str(), (long long)n_expert, (long long)n_embd, norm.name.c_str(),
                 (long long)norm.n_elements(), projection.name.c_str(), (long long)projection.rows(),
                 (long long)in_cols);
  ZINC_RETURN_IF_ERROR(check_dequantize(router.type));
  ZINC_RETURN_IF_ERROR(check_dequantize(projection.type));
  if (norm.type != TensorType::F32) return error("norm %s is not float32", norm.name.c_str());
  if (input_type != TensorType::F32 && input_type != TensorType::Q8_0)
    return error("a folded router's input matrix as %s", std::string(type_name(input_type)).c_str());

  RouterFold f{input_type, n_expert, n_embd, in_cols, {}, {}};
  std::vector<float> r = dequantize(router);  // becomes R = W_r diag(w)
  const float* w = norm.f32();
  for (int64_t i = 0; i < n_expert; ++i)
    for (int64_t c = 0; c < n_embd; ++c) r[size_t(i * n_embd + c)] *= w[c];
  f.stream.resize(size_t(n_expert * n_embd) * 4);
  std::memcpy(f.stream.data(), r.data(), f.stream.size());

  // M = R P, by column tiles (each thread accumulates kRows rows of M over a tile of P's
  // columns), then quantized row by row.
  const std::vector<float> p = dequantize(projection);
  std::vector<float> m(size_t(n_expert * in_cols), 0.f);
  constexpr int64_t kTile = 256, kRows = 4;
  const int64_t tiles = (in_cols + kTile - 1) / kTile, row_sets = (n_expert + kRows - 1) / kRows;
  cpu::ThreadPool pool(0);
  pool.parallel_items(tiles * row_sets, [&](int64_t item) {
    const int64_t c0 = (item % tiles) * kTile, c1 = std::min(in_cols, c0 + kTile), i0 = (item / tiles) * kRows;
    const int64_t i1 = std::min(n_expert, i0 + kRows);
    for (int64_t e = 0; e < n_embd; ++e) {
      const float* prow = &p[size_t(e * in_cols)];
      for (int64_t i = i0; i < i1; ++i) {
        const float a = r[size_t(i * n_embd + e)];
        float* mrow = &m[size_t(i * in_cols)];
        for (int64_t c = c0; c < c1; ++c) mrow[c] += a * prow[c];
      }
    }
  });
  const size_t in_row = row_bytes(input_type, in_cols);
  f.input.resize(size_t(n_expert) * in_row);
  for (int64_t i = 0; i < n_expert; ++i)
    quantize_row(input_type, &m[size_t(i * in_cols)], &f.input[size_t(i) * in_row], in_cols);
  return f;
}

}  // namespace zinc::vulkan
