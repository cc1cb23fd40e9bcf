// zinc logits and zinc bench, run as a user would.
#include <gtest/gtest.h>

#include <cstring>
#include <nlohmann/json.hpp>

#include "support/test_data.h"

namespace zinc::test {
namespace {

std::vector<float> floats(const std::string& path) {
  const auto bytes = read_file(path);
  std::vector<float> v(bytes.size() / 4);
  std::memcpy(v.data(), bytes.data(), v.size() * 4);
  return v;
}

void expect_close_rows(const std::vector<float>& got, const std::vector<float>& ref, size_t V) {
  ASSERT_EQ(got.size(), ref.size());
  for (size_t r = 0; r < ref.size() / V; ++r) {
    double num = 0, den = 0;
    for (size_t i = r * V; i < (r + 1) * V; ++i) {
      num += (double(got[i]) - ref[i]) * (double(got[i]) - ref[i]);
      den += double(ref[i]) * ref[i];
    }
    EXPECT_LE(num / den, 1e-5) << "row " << r;
  }
}

const char* kTokens = "1,403,407,261,378,432,383,286,261,376,298,315,421,395,317,426";  // p1

TEST(LogitsCommand, WritesEveryPositionAsOneBatchOrStepwise) {
  ZINC_REQUIRE_TEST_DATA();
  const auto ref = floats(data_path("reference/p1.stories260K.logits.f32"));
  for (const char* mode : {"", " --stepwise"}) {
    const std::string out = temp_path(std::string("logits") + (mode[0] ? "_step" : "") + ".f32");
    std::string log;
    const int rc = run_command(zinc_binary() + " logits -m " + data_path("models/stories260K.gguf") + " --tokens " +
                                   kTokens + " -o " + out + " -t 2" + mode,
                               &log);
    ASSERT_EQ(rc, 0) << log;
    expect_close_rows(floats(out), ref, 512);
  }
}

TEST(LogitsCommand, BadInputIsAOneLineError) {
  ZINC_REQUIRE_TEST_DATA();
  const std::string model = data_path("models/stories260K.gguf");
  std::string log;
  EXPECT_EQ(run_command(zinc_binary() + " logits -m " + model + " --tokens 1,x,3 -o " + temp_path("x.f32"), &log), 1);
  EXPECT_EQ(log.rfind("error: --tokens: 'x' is not a token id", 0), 0u) << log;
  EXPECT_EQ(run_command(zinc_binary() + " logits -m " + model + " --tokens 1,9999 -o " + temp_path("x.f32"), &log), 1);
  EXPECT_NE(log.find("error: token 9999 at index 1 is outside the vocabulary of 512"), std::string::npos) << log;
  EXPECT_EQ(run_command(zinc_binary() + " logits -m /nonexistent.gguf --tokens 1 -o " + temp_path("x.f32"), &log), 1);
  EXPECT_EQ(log.rfind("error: /nonexistent.gguf", 0), 0u) << log;
  EXPECT_EQ(run_command(zinc_binary() + " logits -m " + model + " --tokens 1 -o " + temp_path("x.f32") + " --backend gpu", &log), 1);
  EXPECT_NE(log.find("unknown backend 'gpu'"), std::string::npos) << log;
  EXPECT_EQ(run_command(zinc_binary() + " logits -m " + model + " -o " + temp_path("x.f32"), &log), 2);  // no --tokens
}

TEST(BenchCommand, JsonHasOneObjectPerTest) {
  ZINC_REQUIRE_TEST_DATA();
  std::string out;
  ASSERT_EQ(run_command(zinc_binary() + " bench -m " + data_path("models/qwen35-q8_0.gguf") +
                            " -p 32 -n 8 -d 16 -r 2 -t 1 -o json 2>/dev/null",
                        &out),
            0)
      << out;
  const auto j = nlohmann::json::parse(out);
  ASSERT_EQ(j.size(), 2u);
  EXPECT_EQ(j[0]["test"], "pp32@d16");
  EXPECT_EQ(j[1]["test"], "tg8@d16");
  for (const auto& r : j) {
    EXPECT_GT(r["avg_ts"].get<double>(), 0.0);
    EXPECT_GE(r["stddev_ts"].get<double>(), 0.0);
    EXPECT_EQ(r["backend"], "cpu");
    EXPECT_GT(r["model_size"].get<uint64_t>(), 1000000u);
  }
  std::string md;
  ASSERT_EQ(run_command(zinc_binary() + " bench -m " + data_path("models/stories260K.gguf") + " -p 16 -n 0 -r 1 -t 1", &md), 0);
  EXPECT_NE(md.find("| pp16 |"), std::string::npos) << md;
  EXPECT_EQ(md.find("tg"), std::string::npos) << md;
}

TEST(BenchCommand, ContextSizeSetsTheCacheOrIsRefused) {
  ZINC_REQUIRE_TEST_DATA();
  const std::string bench = zinc_binary() + " bench -m " + data_path("models/stories260K.gguf") + " -p 8 -n 4 -d 4 -r 1 -t 1";
  std::string out;
  ASSERT_EQ(run_command(bench + " -c 512 -o json 2>/dev/null", &out), 0) << out;
  const auto j = nlohmann::json::parse(out);
  ASSERT_EQ(j.size(), 2u);
  EXPECT_EQ(j[1]["test"], "tg4@d4");
  EXPECT_EQ(j[1]["n_ctx"], 512);
  ASSERT_EQ(run_command(bench + " -o json 2>/dev/null", &out), 0) << out;
  EXPECT_EQ(nlohmann::json::parse(out)[0]["n_ctx"], 13);  // -d 4 + max(8, 4) + 1
  // Comma lists, as llama-bench takes them: each depth runs every -p and -n test.
  ASSERT_EQ(run_command(zinc_binary() + " bench -m " + data_path("models/stories260K.gguf") + " -p 8,4 -n 2 -d 0,6 -r 1 -t 1 -o json 2>/dev/null",
                        &out),
            0)
      << out;
  std::vector<std::string> tests;
  for (const auto& r : nlohmann::json::parse(out)) tests.push_back(r["test"]);
  EXPECT_EQ(tests, (std::vector<std::string>{"pp8", "pp4", "tg2", "pp8@d6", "pp4@d6", "tg2@d6"}));
  EXPECT_EQ(nlohmann::json::parse(out)[0]["n_ctx"], 15);  // 6 + 8 + 1
  EXPECT_EQ(run_command(bench + " -p 8,-1", &out), 1) << out;
  EXPECT_EQ(run_command(bench + " -c 12", &out), 1);
  EXPECT_NE(out.find("-c 12: the tests need 13 tokens of cache"), std::string::npos) << out;
  EXPECT_EQ(run_command(bench + " -c -1", &out), 1);
  EXPECT_NE(out.find("must be >= 0"), std::string::npos) << out;
}

}  // namespace
}  // namespace zinc::test
