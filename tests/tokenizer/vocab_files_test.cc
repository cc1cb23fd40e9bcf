// Every case of every ../shared/vocab/ggml-vocab-*.gguf.inp must tokenize to its .out line
// (no BOS/EOS added, special-token text not parsed), as in llama.cpp's test-tokenizer-0.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <set>
#include <sstream>

#include "gguf/file.h"
#include "support/test_data.h"
#include "tokenizer/tokenizer.h"

namespace zinc::tokenizer {
namespace {

const std::vector<std::string> kVocabs = {"bert-bge", "deepseek-coder", "deepseek-llm", "falcon",    "gemma3",
                                          "gpt-2",    "llama-spm",      "llama3",       "mpt",       "phi-3",
                                          "qwen3",    "refact",         "starcoder"};

std::vector<std::string> split_cases(const std::string& inp) {
  const std::string sep = "\n__ggml_vocab_test__\n";
  std::vector<std::string> cases;
  size_t pos = 0;
  for (size_t hit; (hit = inp.find(sep, pos)) != std::string::npos; pos = hit + sep.size())
    cases.push_back(inp.substr(pos, hit - pos));
  return cases;
}

std::vector<std::vector<int32_t>> read_expected(const std::string& out) {
  std::vector<std::vector<int32_t>> lines;
  std::istringstream in(out);
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream ids(line);
    std::vector<int32_t> v;
    for (int32_t id; ids >> id;) v.push_back(id);
    lines.push_back(v);
  }
  return lines;
}

std::string ids_string(const std::vector<int32_t>& ids) {
  std::string s;
  for (int32_t id : ids) s += " " + std::to_string(id);
  return s;
}

class VocabFile : public testing::TestWithParam<std::string> {};

TEST_P(VocabFile, MatchesExpectedIds) {
  ZINC_REQUIRE_TEST_DATA();
  const std::string base = test::data_path("vocab/ggml-vocab-" + GetParam() + ".gguf");
  auto file = gguf::open_file(base);
  ASSERT_TRUE(file.ok()) << file.status().message();
  auto tok = Tokenizer::load(**file);
  ASSERT_TRUE(tok.ok()) << tok.status().message();
  auto inp = test::read_file(base + ".inp");
  auto out = test::read_file(base + ".out");
  auto cases = split_cases(std::string(inp.begin(), inp.end()));
  auto expected = read_expected(std::string(out.begin(), out.end()));
  ASSERT_GT(cases.size(), 40u);
  ASSERT_EQ(cases.size(), expected.size());
  int failures = 0;
  for (size_t i = 0; i < cases.size(); ++i) {
    std::vector<int32_t> got = (*tok)->encode(cases[i], /*add_special=*/false, /*parse_special=*/false);
    if (got != expected[i]) {
      ++failures;
      ADD_FAILURE() << GetParam() << " case " << i << ": '" << cases[i] << "'\n  expected" << ids_string(expected[i])
                    << "\n  got     " << ids_string(got);
    }
  }
  EXPECT_EQ(failures, 0) << "of " << cases.size() << " cases";
}

INSTANTIATE_TEST_SUITE_P(Shared, VocabFile, testing::ValuesIn(kVocabs), [](const auto& info) {
  std::string name = info.param;
  std::replace(name.begin(), name.end(), '-', '_');
  return name;
});

// A vocabulary added to ../shared/vocab must be added to kVocabs (so it gets its own test).
TEST(VocabFiles, EverySharedVocabularyIsListed) {
  ZINC_REQUIRE_TEST_DATA();
  std::set<std::string> listed(kVocabs.begin(), kVocabs.end());
  for (const auto& e : std::filesystem::directory_iterator(test::data_path("vocab"))) {
    std::string name = e.path().filename().string();
    const std::string prefix = "ggml-vocab-", suffix = ".gguf.inp";
    if (name.rfind(prefix, 0) != 0 || name.size() <= suffix.size() ||
        name.compare(name.size() - suffix.size(), suffix.size(), suffix) != 0)
      continue;
    std::string vocab = name.substr(prefix.size(), name.size() - prefix.size() - suffix.size());
    EXPECT_TRUE(listed.count(vocab)) << vocab << " is not in kVocabs";
  }
}

}  // namespace
}  // namespace zinc::tokenizer
