// The f16 attention kernels of every instruction set this CPU runs against double references:
// head sizes below, at and past the vector width, every row count of a page, padded row strides;
// and the softmax exponentials.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "core/fp16.h"
#include "cpu/kernels/isa.h"
#include "cpu/kernels/kernel_table.h"

namespace zinc::cpu {
namespace {

std::vector<const kernels::KernelTable*> tables() {
  std::vector<const kernels::KernelTable*> out;
  for (Isa isa : {Isa::kScalar, Isa::kAvx2, Isa::kAvx512})
    if (const kernels::KernelTable* kt = kernels::kernel_table(isa)) out.push_back(kt);
  return out;
}

struct Rows {
  std::vector<uint16_t> halves;
  size_t stride_bytes;
  const uint8_t* data() const { return reinterpret_cast<const uint8_t*>(halves.data()); }
  float at(int j, int i) const { return fp16_to_f32(halves[size_t(j) * stride_bytes / 2 + size_t(i)]); }
};

Rows random_rows(int n_rows, int dim, std::mt19937& rng) {
  std::uniform_real_distribution<float> u(-2.f, 2.f);
  Rows r{{}, size_t(dim + 24) * 2};  // padded: rows are not contiguous
  r.halves.resize(size_t(n_rows) * r.stride_bytes / 2);
  for (auto& h : r.halves) h = f32_to_fp16(u(rng));
  return r;
}

TEST(AttentionKernels, F16DotRows) {
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  for (const auto* kt : tables()) {
    for (int dim : {8, 16, 64, 72, 128}) {
      for (int n_rows = 1; n_rows <= 16; ++n_rows) {
        const Rows k = random_rows(n_rows, dim, rng);
        std::vector<float> q(static_cast<size_t>(dim)), out(static_cast<size_t>(n_rows), -1.f);
        for (auto& x : q) x = u(rng);
        kt->f16_dot_rows(q.data(), k.data(), k.stride_bytes, n_rows, dim, 0.25f, out.data());
        for (int j = 0; j < n_rows; ++j) {
          double ref = 0, mag = 0;
          for (int i = 0; i < dim; ++i) {
            ref += double(q[size_t(i)]) * k.at(j, i);
            mag += std::fabs(double(q[size_t(i)]) * k.at(j, i));
          }
          EXPECT_NEAR(out[size_t(j)], 0.25 * ref, 1e-6 * mag + 1e-7)
              << isa_name(kt->isa) << " dim=" << dim << " rows=" << n_rows << " j=" << j;
        }
      }
    }
  }
}

TEST(AttentionKernels, F16AxpyRows) {
  std::mt19937 rng(8);
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  for (const auto* kt : tables()) {
    for (int dim : {6, 16, 40, 64, 80}) {
      for (int n_rows = 1; n_rows <= 16; ++n_rows) {
        const Rows v = random_rows(n_rows, dim, rng);
        std::vector<float> w(static_cast<size_t>(n_rows)), acc(static_cast<size_t>(dim));
        for (auto& x : w) x = u(rng);
        for (auto& x : acc) x = u(rng);
        std::vector<float> got = acc;
        kt->f16_axpy_rows(w.data(), v.data(), v.stride_bytes, n_rows, dim, got.data());
        for (int i = 0; i < dim; ++i) {
          double ref = acc[size_t(i)], mag = std::fabs(acc[size_t(i)]);
          for (int j = 0; j < n_rows; ++j) {
            ref += double(w[size_t(j)]) * v.at(j, i);
            mag += std::fabs(double(w[size_t(j)]) * v.at(j, i));
          }
          EXPECT_NEAR(got[size_t(i)], ref, 1e-6 * mag + 1e-7)
              << isa_name(kt->isa) << " dim=" << dim << " rows=" << n_rows << " i=" << i;
        }
      }
    }
  }
}

TEST(AttentionKernels, ExpShiftSum) {
  std::mt19937 rng(9);
  std::uniform_real_distribution<float> u(-30.f, 0.f);
  for (const auto* kt : tables()) {
    for (int n = 1; n <= 16; ++n) {
      for (int rep = 0; rep < 20; ++rep) {
        const float m = 3.f;
        float s[16], ref[16];
        double ref_sum = 0;
        for (int j = 0; j < 16; ++j) {
          s[j] = m + u(rng) * (rep == 0 && j == 3 ? 10.f : 1.f);  // one far below: underflows
          if (rep == 1 && j == 5) s[j] = m;                         // the maximum itself: 1
          ref[j] = std::exp(s[j] - m);
          if (j < n) ref_sum += ref[j];
        }
        const float sum = kt->exp_shift_sum(s, n, m);
        for (int j = 0; j < n; ++j)
          EXPECT_NEAR(s[j], ref[j], 4e-7 * ref[j] + 1e-30) << isa_name(kt->isa) << " n=" << n << " j=" << j;
        EXPECT_NEAR(sum, ref_sum, 1e-6 * ref_sum) << isa_name(kt->isa) << " n=" << n;
      }
    }
  }
}

}  // namespace
}  // namespace zinc::cpu
