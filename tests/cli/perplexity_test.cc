// zinc perplexity against the reference engine's logits: the first chunk of the llama model's
// 213-token prompt, scored from ../shared/reference's rows, and the bad inputs.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>

#include "gguf/file.h"
#include "support/test_data.h"
#include "tokenizer/tokenizer.h"

namespace zinc::test {
namespace {

int zinc(const std::string& args, std::string* out) { return run_command(zinc_binary() + " " + args + " 2>&1", out); }

// The reference case of `model` and prompt `prompt`.
nlohmann::json reference_case(const std::string& model, const std::string& prompt) {
  std::ifstream f(data_path("reference/manifest.json"));
  const auto manifest = nlohmann::json::parse(f);
  for (const auto& c : manifest["cases"])
    if (c["model"] == model && c["prompt"] == prompt) return c;
  return nullptr;
}

TEST(Perplexity, FirstChunkMatchesTheReferenceLogits) {
  ZINC_REQUIRE_TEST_DATA();
  const std::string model = "models/llama-f32.gguf";
  const auto c = reference_case(model, "p2");
  ASSERT_FALSE(c.is_null());
  const std::vector<int32_t> tokens = c["tokens"];
  // The text whose tokens are the prompt's (BOS first, as perplexity adds it).
  auto f = gguf::open_file(data_path(model));
  ASSERT_TRUE(f.ok());
  auto tok = tokenizer::Tokenizer::load(**f);
  ASSERT_TRUE(tok.ok());
  ASSERT_EQ(tokens[0], (*tok)->bos());
  const std::string text = (*tok)->decode(std::span<const int32_t>(tokens).subspan(1)).value();
  ASSERT_EQ((*tok)->encode(text, true, false), tokens) << "the prompt's text does not tokenize back to it";
  const std::string file = temp_path("p2.txt");
  write_file(file, text.data(), text.size());

  // -c 100: the first chunk's rows 50..98 score tokens 51..99.
  const auto bytes = read_file(data_path("reference/" + c["logits_file"].get<std::string>()));
  const size_t n_vocab = bytes.size() / 4 / tokens.size();
  std::vector<float> ref(bytes.size() / 4);
  std::memcpy(ref.data(), bytes.data(), bytes.size());
  double nll = 0, nll2 = 0;
  int n = 0;
  for (int j = 50; j < 99; ++j) {
    const float* row = ref.data() + size_t(j) * n_vocab;
    double z = 0, mx = row[0];
    for (size_t v = 0; v < n_vocab; ++v) mx = std::max<double>(mx, row[v]);
    for (size_t v = 0; v < n_vocab; ++v) z += std::exp(row[v] - mx);
    const double x = std::log(z) + mx - row[tokens[size_t(j) + 1]];
    nll += x;
    nll2 += x * x;
    ++n;
  }
  const double ppl = std::exp(nll / n);
  const double se = std::sqrt((nll2 / n - (nll / n) * (nll / n)) / (n - 1)) * ppl;

  std::string out;
  ASSERT_EQ(zinc("perplexity -m " + data_path(model) + " -f " + file + " -c 100 --chunks 1 -t 2", &out), 0) << out;
  std::smatch m;
  ASSERT_TRUE(std::regex_search(out, m, std::regex(R"(Final estimate: PPL = ([0-9.]+) \+/- ([0-9.]+))"))) << out;
  EXPECT_NEAR(std::stod(m[1]), ppl, ppl * 1e-4) << out;
  EXPECT_NEAR(std::stod(m[2]), se, se * 1e-3 + 1e-5) << out;
  EXPECT_NE(out.find("[1]"), std::string::npos) << out;
  EXPECT_EQ(out.find("[2]"), std::string::npos) << out;

  // Every chunk: two of 100 tokens; the running figure after each.
  ASSERT_EQ(zinc("perplexity -m " + data_path(model) + " -f " + file + " -c 100 -t 2", &out), 0) << out;
  EXPECT_NE(out.find("[2]"), std::string::npos) << out;
  EXPECT_EQ(out.find("[3]"), std::string::npos) << out;
}

TEST(Perplexity, BadInputsAreOneLineErrors) {
  ZINC_REQUIRE_TEST_DATA();
  const std::string model = data_path("models/stories260K.gguf");
  const std::string short_file = temp_path("short.txt");
  write_file(short_file, "Once upon a time", 16);
  std::string out;
  EXPECT_EQ(zinc("perplexity -m " + model + " -f " + short_file + " -c 64", &out), 1) << out;
  EXPECT_NE(out.find("needs at least 128"), std::string::npos) << out;
  EXPECT_EQ(zinc("perplexity -m " + model + " -f /nonexistent.txt", &out), 1) << out;
  EXPECT_EQ(zinc("perplexity -m " + model + " -f " + short_file + " -c 0", &out), 1) << out;
  EXPECT_EQ(zinc("perplexity -m " + model + " -f " + short_file + " --chunks 0", &out), 1) << out;
  EXPECT_EQ(zinc("perplexity -m " + model + " -f " + short_file + " -c x", &out), 2) << out;
  EXPECT_EQ(zinc("perplexity -m /nonexistent.gguf -f " + short_file, &out), 1) << out;
}

}  // namespace
}  // namespace zinc::test
