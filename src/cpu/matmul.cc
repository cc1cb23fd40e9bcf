#include "cpu/matmul.h"

#include <vector>

#include "core/quant.h"

namespace zinc::cpu {

void matmul(const WeightView& w, const float* x, int64_t n_tokens, float* y, ThreadPool& pool) {
  pool.parallel_for(w.rows, 16, [&](int64_t begin, int64_t end) {
    std::vector<float> row(size_t(w.cols));
    for (int64_t r = begin; r < end; ++r) {
      const float* wr = row.data();
      if (w.type == TensorType::F32) {
        wr = reinterpret_cast<const float*>(static_cast<const uint8_t*>(w.data) + size_t(r) * w.row_stride_bytes);
      } else {
        dequantize_row(w.type, static_cast<const uint8_t*>(w.data) + size_t(r) * w.row_stride_bytes, row.data(),
                       w.cols);
      }
      for (int64_t t = 0; t < n_tokens; ++t) {
        const float* xt = x + t * w.cols;
        float acc = 0.f;
        for (int64_t k = 0; k < w.cols; ++k) acc += wr[k] * xt[k];
        y[t * w.rows + r] = acc;
      }
    }
  });
}

}  // namespace zinc::cpu
