// The pieces of the quantized matmul on their own: weight decoding into the canonical layout and
// activation quantization, for every instruction set this CPU runs, against the spec formulas,
// against the scalar kernels (bit for bit), and against llama.cpp's probe tensors.
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "cpu/kernels/isa.h"
#include "cpu/kernels/kernel_table.h"
#include "matmul_test_util.h"
#include "support/test_data.h"

namespace zinc::cpu {
namespace {

using kernels::ActGroup;
using kernels::canonical_pos;
using kernels::KernelTable;
using kernels::kGroupElems;
using kernels::WeightGroup;
using kernels::WeightRows;

std::vector<const KernelTable*> tables() {
  std::vector<const KernelTable*> out;
  for (Isa isa : {Isa::kScalar, Isa::kAvx2, Isa::kAvx512})
    if (const KernelTable* kt = kernels::kernel_table(isa)) out.push_back(kt);
  return out;
}

std::vector<WeightGroup> unpack_all(const KernelTable& kt, const WeightRows& w, int64_t rows) {
  const int64_t n_groups = (w.cols + kGroupElems - 1) / kGroupElems;
  std::vector<WeightGroup> panel(size_t(rows * n_groups));
  kt.unpack[int(w.type)](w, 0, int(rows), 0, n_groups, panel.data());
  return panel;
}

// Decoded value of element k of a row, and a bound on float rounding in d * q + m.
float decoded(const WeightGroup* row_groups, int64_t k, float* tolerance) {
  const WeightGroup& g = row_groups[k / kGroupElems];
  const int e = int(k % kGroupElems), lane = e / 16;
  const float dq = g.d[lane] * float(g.q[canonical_pos(e)]);
  *tolerance = 4e-7f * (std::fabs(dq) + std::fabs(g.m[lane])) + 1e-30f;
  return dq + g.m[lane];
}

// Decodes 3 random rows of type t with every table: bit-identical to the scalar decoder, and
// the values of the spec formulas (and of core's dequantize_row).
void check_decoding(TensorType t, bool raw_bytes, std::mt19937& rng) {
  // 32-element formats: 11 blocks = one full group and a 3-block tail.
  const int64_t rows = 3, cols = type_info(t).block_elems == 32 ? 352 : 512;
  const int64_t n_groups = (cols + kGroupElems - 1) / kGroupElems;
  const auto bytes = test_util::random_weights(t, rows, cols, rng, raw_bytes);
  const WeightRows w{t, bytes.data(), row_bytes(t, cols), cols};
  const auto reference = unpack_all(*kernels::kernel_table(Isa::kScalar), w, rows);
  std::vector<std::vector<float>> ref;
  for (int64_t r = 0; r < rows; ++r) {
    ref.push_back(test_util::ref_dequantize_row(t, bytes.data() + r * w.row_stride_bytes, cols));
    if (!can_dequantize(t)) continue;
    std::vector<float> core(static_cast<size_t>(cols));  // the test's formulas agree with core's
    dequantize_row(t, bytes.data() + r * w.row_stride_bytes, core.data(), cols);
    for (int64_t k = 0; k < cols; ++k)
      ASSERT_NEAR(core[size_t(k)], ref[r][size_t(k)], 1e-6f * std::fabs(core[size_t(k)]));
  }
  for (const KernelTable* kt : tables()) {
    SCOPED_TRACE(std::string(type_name(t)) + " " + std::string(isa_name(kt->isa)) + (raw_bytes ? " raw" : ""));
    const auto panel = unpack_all(*kt, w, rows);
    EXPECT_EQ(std::memcmp(panel.data(), reference.data(), panel.size() * sizeof(WeightGroup)), 0)
        << "differs from the scalar decoder";
    int bad = 0;
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t k = 0; k < n_groups * kGroupElems; ++k) {
        float tol;
        const float v = decoded(panel.data() + r * n_groups, k, &tol);
        const float want = k < cols ? ref[r][size_t(k)] : 0.f;  // the tail decodes to zeros
        if (!(std::fabs(v - want) <= tol) && bad++ < 5)
          ADD_FAILURE() << "row " << r << " k " << k << ": " << v << " vs " << want;
      }
    EXPECT_EQ(bad, 0);
  }
}

TEST(MatmulKernels, DecodedWeightsMatchSpecFormulas) {
  std::mt19937 rng(7);
  for (TensorType t : test_util::kQuantTypes) {
    check_decoding(t, /*raw_bytes=*/false, rng);  // quantize_row output
    check_decoding(t, /*raw_bytes=*/true, rng);   // any bit pattern
  }
}

TEST(MatmulKernels, DecodedWeightsMatchProbeTensors) {
  ZINC_REQUIRE_TEST_DATA();
  for (TensorType t : test_util::kQuantTypes) {
    const std::string name(type_name(t));
    SCOPED_TRACE(name);
    const auto file = zinc::test::read_file(zinc::test::data_path("quant/probe-" + name + ".gguf"));
    const auto dequant = zinc::test::read_file(zinc::test::data_path("quant/probe-" + name + ".dequant.f32"));
    const int64_t rows = 256, cols = 256;
    const size_t rb = row_bytes(t, cols), size = rb * rows;
    // The probe holds one tensor; the data section (32-byte aligned) ends the file.
    ASSERT_GE(file.size(), size);
    ASSERT_EQ((file.size() - size) % 32, 0u);
    ASSERT_EQ(dequant.size(), size_t(rows * cols) * 4);
    const auto* data = reinterpret_cast<const uint8_t*>(file.data()) + (file.size() - size);
    const WeightRows w{t, data, rb, cols};
    for (const KernelTable* kt : tables()) {
      SCOPED_TRACE(isa_name(kt->isa));
      const auto panel = unpack_all(*kt, w, rows);
      int bad = 0;
      for (int64_t r = 0; r < rows; ++r)
        for (int64_t k = 0; k < cols; ++k) {
          float want, tol;
          std::memcpy(&want, dequant.data() + 4 * (r * cols + k), 4);
          const float v = decoded(panel.data() + r, k, &tol);
          if (!(std::fabs(v - want) <= tol) && bad++ < 5)
            ADD_FAILURE() << "row " << r << " k " << k << ": " << v << " vs " << want;
        }
      EXPECT_EQ(bad, 0);
    }
  }
}

// One row of weights that ends right before an unreadable page: decodes it with every table.
void decode_row_before_guard_page(TensorType t, int64_t cols, std::mt19937& rng) {
  const size_t page = size_t(sysconf(_SC_PAGESIZE));
  const size_t rb = row_bytes(t, cols), span = (rb + page - 1) / page * page;
  const auto bytes = test_util::random_weights(t, 1, cols, rng);
  auto* base =
      static_cast<uint8_t*>(mmap(nullptr, span + page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
  ASSERT_NE(base, MAP_FAILED);
  ASSERT_EQ(mprotect(base + span, page, PROT_NONE), 0);
  uint8_t* row = base + span - rb;
  std::memcpy(row, bytes.data(), rb);
  const WeightRows w{t, row, rb, cols};
  const std::vector<float> x(size_t(cols), 1.f);
  for (const KernelTable* kt : tables()) {
    SCOPED_TRACE(std::string(type_name(t)) + " " + std::string(isa_name(kt->isa)) + " cols " + std::to_string(cols));
    const auto panel = unpack_all(*kt, w, 1);
    std::vector<ActGroup> a(2);
    kt->quantize_row(x.data(), cols, a.data());
    const ActGroup* act[1] = {a.data()};
    float y = NAN;
    float* yp[1] = {&y};
    kt->gemv[int(t)](w, 0, 1, act, 1, yp);
    EXPECT_TRUE(std::isfinite(y));
  }
  munmap(base, span + page);
}

// No decoder may read past a row's last block (the last row of a tensor may end a mapping).
TEST(MatmulKernels, DecodersStayInsideTheRow) {
  std::mt19937 rng(13);
  for (TensorType t : test_util::kQuantTypes) {
    decode_row_before_guard_page(t, 256, rng);                                      // one full group
    if (type_info(t).block_elems == 32) decode_row_before_guard_page(t, 288, rng);  // and a partial one
  }
}

TEST(MatmulKernels, QuantizedActivationsMatchScalarAndInput) {
  std::mt19937 rng(3);
  const int64_t cols = 3 * kGroupElems + 96;  // a partial last group
  const int64_t n_groups = 4, n_rows = 64;    // many rows: rounding ties must agree too
  for (int64_t row = 0; row < n_rows; ++row) {
    auto x = test_util::random_floats(size_t(cols), rng, row == 0 ? 2.f : 1.f + float(row));
    if (row == 0) {
      for (int k = 32; k < 64; ++k) x[k] = 0.f;  // an all-zero block
      x[100] = 1e-30f;                           // a tiny value next to normal ones
    }
    std::vector<ActGroup> reference(n_groups);
    kernels::kernel_table(Isa::kScalar)->quantize_row(x.data(), cols, reference.data());
    for (const KernelTable* kt : tables()) {
      SCOPED_TRACE(std::string(isa_name(kt->isa)) + " row " + std::to_string(row));
      std::vector<ActGroup> a(n_groups);
      kt->quantize_row(x.data(), cols, a.data());
      ASSERT_EQ(std::memcmp(a.data(), reference.data(), a.size() * sizeof(ActGroup)), 0) << "differs from scalar";
      for (int64_t g = 0; g < n_groups; ++g)
        for (int lane = 0; lane < 16; ++lane) {
          int sum = 0;
          for (int l = 0; l < 16; ++l) {
            const int e = 16 * lane + l;
            const int64_t k = g * kGroupElems + e;
            const int q = a[g].q[canonical_pos(e)];
            sum += q;
            ASSERT_GE(q, -127);
            const float want = k < cols ? x[size_t(k)] : 0.f;
            ASSERT_LE(std::fabs(a[g].d[lane] * float(q) - want), a[g].d[lane] * 0.5f * 1.0001f + 1e-30f) << k;
          }
          ASSERT_EQ(a[g].s[lane], a[g].d[lane] * float(sum));
          ASSERT_EQ(a[g].d[lane], a[g].d[lane ^ 1]);  // one scale per 32 elements
        }
    }
  }
}

}  // namespace
}  // namespace zinc::cpu
