// kernels_impl.h built for AVX-512 (this file alone gets -mavx512f ... -mavx512vnni -mavx512vbmi).
#include "cpu/kernels/simd_avx512.h"
// simd_avx512.h first: kernels_impl.h is written against its Simd.
#include "cpu/kernels/kernels_impl.h"

namespace zinc::cpu::kernels {

const KernelTable& avx512_kernel_table() {
  static const KernelTable table = make_table<avx512::Simd>();
  return table;
}

}  // namespace zinc::cpu::kernels
