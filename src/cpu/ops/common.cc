// Helpers shared by the op files.
#include "cpu/matmul.h"
#include "cpu/ops/ops.h"

namespace zinc::cpu {

WeightView weight_view(const graph::Weight& w, int64_t expert) {
  return {w.type, static_cast<const uint8_t*>(w.data) + size_t(expert) * w.slice_bytes, w.rows(), w.cols(),
          w.row_bytes};
}

namespace ops {

float rms_scale(const float* x, int64_t n, float eps) {
  double sum = 0;
  for (int64_t i = 0; i < n; ++i) sum += double(x[i]) * double(x[i]);
  const float mean = float(sum / double(n));
  return 1.f / std::sqrt(mean + eps);
}

}  // namespace ops
}  // namespace zinc::cpu
