// The reference kernels: kernels_impl.h over plain C++ vectors, built with the baseline flags.
#include "cpu/kernels/simd_scalar.h"
// simd_scalar.h first: kernels_impl.h is written against its Simd.
#include "cpu/kernels/kernels_impl.h"

namespace zinc::cpu::kernels {

const KernelTable& scalar_kernel_table() {
  static const KernelTable table = make_table<scalar::Simd>();
  return table;
}

}  // namespace zinc::cpu::kernels
