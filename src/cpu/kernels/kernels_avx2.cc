// kernels_impl.h built for AVX2 (this file alone gets -mavx2 -mfma -mf16c).
#include "cpu/kernels/simd_avx2.h"
// simd_avx2.h first: kernels_impl.h is written against its Simd.
#include "cpu/kernels/kernels_impl.h"

namespace zinc::cpu::kernels {

const KernelTable& avx2_kernel_table() {
  static const KernelTable table = make_table<avx2::Simd>();
  return table;
}

}  // namespace zinc::cpu::kernels
