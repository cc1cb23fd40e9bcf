// zinc dump: every probe tensor dumped byte for byte as its exact dequantization, and the errors.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "gguf/writer.h"
#include "support/test_data.h"

namespace zinc {
namespace {

std::string quoted(const std::string& s) { return "'" + s + "'"; }

class DumpProbe : public ::testing::TestWithParam<const char*> {};

TEST_P(DumpProbe, MatchesExactDequantizationByteForByte) {
  ZINC_REQUIRE_TEST_DATA();
  const std::string type = GetParam();
  const std::string out = test::temp_path("dump-" + type + ".f32");
  std::string output;
  const int rc = test::run_command(test::zinc_binary() + " dump " +
                                       quoted(test::data_path("quant/probe-" + type + ".gguf")) +
                                       " blk.0.attn_q.weight -o " + quoted(out),
                                   &output);
  ASSERT_EQ(rc, 0) << output;
  EXPECT_NE(output.find("wrote blk.0.attn_q.weight " + type + " [256, 256]"), std::string::npos) << output;
  const auto got = test::read_file(out);
  const auto want = test::read_file(test::data_path("quant/probe-" + type + ".dequant.f32"));
  ASSERT_EQ(got.size(), want.size());
  EXPECT_TRUE(got == want) << type << ": first difference at byte "
                           << std::mismatch(got.begin(), got.end(), want.begin()).first - got.begin();
}

INSTANTIATE_TEST_SUITE_P(AllProbeTypes, DumpProbe,
                         ::testing::Values("F16", "BF16", "Q4_0", "Q4_1", "Q5_0", "Q5_1", "Q8_0", "Q2_K", "Q3_K",
                                           "Q4_K", "Q5_K", "Q6_K", "IQ4_NL", "IQ4_XS", "MXFP4"),
                         [](const ::testing::TestParamInfo<const char*>& info) { return std::string(info.param); });

TEST(Dump, MissingTensorIsAnError) {
  ZINC_REQUIRE_TEST_DATA();
  std::string output;
  const int rc = test::run_command(test::zinc_binary() + " dump " + quoted(test::data_path("quant/probe-Q8_0.gguf")) +
                                       " no.such.tensor -o " + quoted(test::temp_path("missing.f32")),
                                   &output);
  EXPECT_EQ(rc, 1);
  EXPECT_EQ(output.rfind("error: ", 0), 0u) << output;
  EXPECT_NE(output.find("no tensor named 'no.such.tensor'"), std::string::npos) << output;
}

TEST(Dump, UnsupportedTypeIsAnErrorNamingTheType) {
  // A 256-element IQ2_XXS tensor (66 bytes of random codes): a real type zinc cannot dequantize.
  const std::string model = test::temp_path("iq2.gguf");
  gguf::Writer w;
  w.set("general.architecture", gguf::Value::string("llama"));
  ASSERT_TRUE(w.add_tensor("blk.0.ffn_up.weight", TensorType::IQ2_XXS, {256}, [](std::span<uint8_t> out) {
                 std::mt19937 rng(3);
                 for (auto& b : out) b = uint8_t(rng());
                 return Status();
               }).ok());
  ASSERT_TRUE(w.write(model).ok());
  const std::string out = test::temp_path("iq2.f32");
  std::string output;
  const int rc = test::run_command(test::zinc_binary() + " dump " + quoted(model) + " blk.0.ffn_up.weight -o " + quoted(out),
                                   &output);
  EXPECT_EQ(rc, 1);
  EXPECT_NE(output.find("error: "), std::string::npos) << output;
  EXPECT_NE(output.find("IQ2_XXS"), std::string::npos) << output;
  EXPECT_NE(output.find("blk.0.ffn_up.weight"), std::string::npos) << output;
  EXPECT_FALSE(std::ifstream(out).good()) << "no output file for a failed dump";
}

TEST(Dump, UnwritableOutputIsAnError) {
  ZINC_REQUIRE_TEST_DATA();
  const std::string model = quoted(test::data_path("quant/probe-Q4_0.gguf"));
  for (const std::string& target : {std::string("/nonexistent-zinc-dir/out.f32"), test::temp_path("")}) {
    std::string output;
    const int rc = test::run_command(test::zinc_binary() + " dump " + model + " blk.0.attn_q.weight -o " + quoted(target),
                                     &output);
    EXPECT_EQ(rc, 1) << target;
    EXPECT_NE(output.find("error: cannot write '" + target + "'"), std::string::npos) << output;
  }
}

TEST(Dump, HelpAndMissingOutputFlag) {
  std::string output;
  EXPECT_EQ(test::run_command(test::zinc_binary() + " dump --help", &output), 0);
  EXPECT_NE(output.find("--output"), std::string::npos) << output;
  EXPECT_NE(output.find("float32"), std::string::npos) << output;
  EXPECT_EQ(test::run_command(test::zinc_binary() + " dump model.gguf tensor", &output), 2) << output;
}

}  // namespace
}  // namespace zinc
