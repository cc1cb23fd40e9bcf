#include "cpu/kernels/kernel_table.h"

namespace zinc::cpu::kernels {

bool is_quantized_kernel_type(TensorType t) {
  switch (t) {
    case TensorType::Q4_0:
    case TensorType::Q4_1:
    case TensorType::Q5_0:
    case TensorType::Q5_1:
    case TensorType::Q8_0:
    case TensorType::IQ4_NL:
    case TensorType::MXFP4:
    case TensorType::Q2_K:
    case TensorType::Q3_K:
    case TensorType::Q4_K:
    case TensorType::Q5_K:
    case TensorType::Q6_K:
    case TensorType::IQ4_XS: return true;
    default: return false;
  }
}

bool is_wide_type(TensorType t) { return t == TensorType::Q8_0 || t == TensorType::IQ4_NL || t == TensorType::IQ4_XS; }

int64_t group_bytes(TensorType t) {
  const auto& info = type_info(t);
  return int64_t(info.block_bytes) * (kGroupElems / int64_t(info.block_elems));
}

const KernelTable* kernel_table(Isa isa) {
  // Even building a SIMD table runs that ISA's instructions: only touch what the CPU supports.
  if (!cpu_supports(isa)) return nullptr;
  switch (isa) {
    case Isa::kScalar: return &scalar_kernel_table();
#if defined(ZINC_X86_KERNELS)
    case Isa::kAvx2: return &avx2_kernel_table();
    case Isa::kAvx512: return &avx512_kernel_table();
#endif
    default: return nullptr;
  }
}

}  // namespace zinc::cpu::kernels
