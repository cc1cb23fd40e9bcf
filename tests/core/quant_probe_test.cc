// dequantize_row against the exact dequantization of every probe tensor in ../shared/quant,
// every float compared bit for bit. The core tests link only zinc_core, so the probe GGUF
// (one tensor) is located by a minimal header walk here instead of gguf::File.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "core/quant.h"
#include "support/test_data.h"

namespace zinc {
namespace {

// Reads what a GGUF v3 header needs to locate its first tensor's data.
class HeaderReader {
 public:
  explicit HeaderReader(const std::vector<char>& bytes) : b_(bytes) {}
  template <typename T>
  T get() {
    T v{};
    if (pos_ + sizeof(T) > b_.size()) throw std::runtime_error("truncated GGUF header");
    std::memcpy(&v, b_.data() + pos_, sizeof(T));
    pos_ += sizeof(T);
    return v;
  }
  std::string str() {
    const uint64_t n = get<uint64_t>();
    if (pos_ + n > b_.size()) throw std::runtime_error("truncated GGUF string");
    std::string s(b_.data() + pos_, n);
    pos_ += n;
    return s;
  }
  // Skips one metadata value of GGUF type `type`; returns it when it is an integer.
  uint64_t skip_value(uint32_t type) {
    static const int kScalarBytes[13] = {1, 1, 2, 2, 4, 4, 4, 1, 0, 0, 8, 8, 8};
    if (type == 8) return str(), 0;
    if (type == 9) {
      const uint32_t elem = get<uint32_t>();
      const uint64_t n = get<uint64_t>();
      for (uint64_t i = 0; i < n; ++i) skip_value(elem);
      return 0;
    }
    if (type > 12) throw std::runtime_error("bad GGUF value type");
    uint64_t v = 0;
    std::memcpy(&v, b_.data() + pos_, size_t(kScalarBytes[type]));
    pos_ += size_t(kScalarBytes[type]);
    return v;
  }
  size_t pos() const { return pos_; }

 private:
  const std::vector<char>& b_;
  size_t pos_ = 0;
};

struct ProbeTensor {
  TensorType type;
  int64_t ne0, ne1;
  const char* data;
};

ProbeTensor locate_single_tensor(const std::vector<char>& bytes) {
  HeaderReader r(bytes);
  if (r.get<uint32_t>() != 0x46554747) throw std::runtime_error("not a GGUF file");
  r.get<uint32_t>();  // version
  const uint64_t n_tensors = r.get<uint64_t>(), n_kv = r.get<uint64_t>();
  uint64_t alignment = 32;
  for (uint64_t i = 0; i < n_kv; ++i) {
    const std::string key = r.str();
    const uint64_t v = r.skip_value(r.get<uint32_t>());
    if (key == "general.alignment") alignment = v;
  }
  if (n_tensors != 1) throw std::runtime_error("probe files hold one tensor");
  r.str();
  const uint32_t n_dims = r.get<uint32_t>();
  int64_t ne[4] = {1, 1, 1, 1};
  for (uint32_t d = 0; d < n_dims; ++d) ne[d] = r.get<int64_t>();
  const auto type = TensorType(r.get<uint32_t>());
  const uint64_t offset = r.get<uint64_t>();
  const size_t data_start = (r.pos() + alignment - 1) / alignment * alignment;
  return {type, ne[0], ne[1], bytes.data() + data_start + offset};
}

class QuantProbe : public ::testing::TestWithParam<const char*> {};

TEST_P(QuantProbe, DequantizeIsBitExact) {
  ZINC_REQUIRE_TEST_DATA();
  const std::string type_name = GetParam();
  const auto gguf = test::read_file(test::data_path("quant/probe-" + type_name + ".gguf"));
  const auto expected = test::read_file(test::data_path("quant/probe-" + type_name + ".dequant.f32"));
  const ProbeTensor t = locate_single_tensor(gguf);
  ASSERT_EQ(std::string(zinc::type_name(t.type)), type_name);
  ASSERT_TRUE(can_dequantize(t.type));
  ASSERT_TRUE(check_dequantize(t.type).ok());
  ASSERT_EQ(expected.size(), size_t(t.ne0 * t.ne1) * 4);
  const size_t row_size = row_bytes(t.type, t.ne0);
  ASSERT_LE(t.data + row_size * size_t(t.ne1), gguf.data() + gguf.size());

  std::vector<float> row(size_t(t.ne0));
  int64_t mismatches = 0;
  for (int64_t r = 0; r < t.ne1; ++r) {
    dequantize_row(t.type, t.data + row_size * size_t(r), row.data(), t.ne0);
    for (int64_t i = 0; i < t.ne0; ++i) {
      uint32_t got, want;
      std::memcpy(&got, &row[size_t(i)], 4);
      std::memcpy(&want, expected.data() + (r * t.ne0 + i) * 4, 4);
      if (got != want && mismatches++ < 5)
        ADD_FAILURE() << type_name << " row " << r << " element " << i << ": got 0x" << std::hex << got
                      << " want 0x" << want << std::dec;
    }
  }
  EXPECT_EQ(mismatches, 0) << "of " << t.ne0 * t.ne1 << " elements";
}

INSTANTIATE_TEST_SUITE_P(AllProbeTypes, QuantProbe,
                         ::testing::Values("F16", "BF16", "Q4_0", "Q4_1", "Q5_0", "Q5_1", "Q8_0", "Q2_K", "Q3_K",
                                           "Q4_K", "Q5_K", "Q6_K", "IQ4_NL", "IQ4_XS", "MXFP4"),
                         [](const ::testing::TestParamInfo<const char*>& info) { return std::string(info.param); });

}  // namespace
}  // namespace zinc
