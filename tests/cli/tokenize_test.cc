// zinc tokenize / zinc detokenize, run as a user would.
#include <gtest/gtest.h>

#include <algorithm>

#include "support/test_data.h"

namespace zinc {
namespace {

std::string shell_quoted(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

std::string vocab(const std::string& name) { return test::data_path("vocab/ggml-vocab-" + name + ".gguf"); }

int zinc(const std::string& args, std::string* out) {
  return test::run_command(shell_quoted(test::zinc_binary()) + " " + args, out);
}

TEST(Tokenize, PrintsIdsOnOneLine) {
  ZINC_REQUIRE_TEST_DATA();
  std::string out;
  ASSERT_EQ(zinc("tokenize -m " + shell_quoted(vocab("llama-spm")) + " 'Hello world'", &out), 0) << out;
  EXPECT_EQ(out, "15043 3186\n");
  ASSERT_EQ(zinc("tokenize -m " + shell_quoted(vocab("llama-spm")) + " --json --add-special 'Hello world'", &out), 0);
  EXPECT_EQ(out, "[1,15043,3186]\n");
  ASSERT_EQ(zinc("tokenize -m " + shell_quoted(vocab("llama-spm")) + " --json ''", &out), 0);
  EXPECT_EQ(out, "[]\n");
}

TEST(Tokenize, ParseSpecialControlsControlTokens) {
  ZINC_REQUIRE_TEST_DATA();
  std::string out;
  ASSERT_EQ(zinc("tokenize -m " + shell_quoted(vocab("llama3")) + " --parse-special 'Hi<|eot_id|>'", &out), 0) << out;
  EXPECT_EQ(out, "13347 128009\n");
  ASSERT_EQ(zinc("tokenize -m " + shell_quoted(vocab("llama3")) + " 'Hi<|eot_id|>'", &out), 0);
  EXPECT_NE(out.find("13347 27"), std::string::npos) << out;  // "<" and the rest as plain text
}

TEST(Tokenize, ReadsAFileAndRoundTripsThroughDetokenize) {
  ZINC_REQUIRE_TEST_DATA();
  const std::string text = "Qwen says: 你好, мир! 123\n\tdone";
  const std::string path = test::temp_path("tokenize_input.txt");
  test::write_file(path, text.data(), text.size());
  std::string ids;
  ASSERT_EQ(zinc("tokenize -m " + shell_quoted(vocab("qwen3")) + " -f " + shell_quoted(path), &ids), 0) << ids;
  ASSERT_FALSE(ids.empty());
  ids.pop_back();  // newline
  std::string back;
  ASSERT_EQ(zinc("detokenize -m " + shell_quoted(vocab("qwen3")) + " " + ids, &back), 0) << back;
  EXPECT_EQ(back, text + "\n");
  std::string json;
  ASSERT_EQ(zinc("tokenize -m " + shell_quoted(vocab("qwen3")) + " --json -f " + shell_quoted(path), &json), 0);
  json.pop_back();
  ASSERT_EQ(zinc("detokenize -m " + shell_quoted(vocab("qwen3")) + " " + shell_quoted(json), &back), 0) << back;
  EXPECT_EQ(back, text + "\n");
}

TEST(Detokenize, RendersControlTokensOnlyWhenAsked) {
  ZINC_REQUIRE_TEST_DATA();
  std::string out;
  ASSERT_EQ(zinc("detokenize -m " + shell_quoted(vocab("llama3")) + " 128000 13347 128009", &out), 0) << out;
  EXPECT_EQ(out, "Hi\n");
  ASSERT_EQ(zinc("detokenize -m " + shell_quoted(vocab("llama3")) + " --special 128000 13347 128009", &out), 0);
  EXPECT_EQ(out, "<|begin_of_text|>Hi<|eot_id|>\n");
}

TEST(Detokenize, BadInputIsAOneLineError) {
  ZINC_REQUIRE_TEST_DATA();
  std::string out;
  EXPECT_EQ(zinc("detokenize -m " + shell_quoted(vocab("gpt-2")) + " 10 50257", &out), 1);
  EXPECT_EQ(out, "error: token id 50257 at position 1 is out of range (the vocabulary has 50257 tokens)\n");
  EXPECT_EQ(zinc("detokenize -m " + shell_quoted(vocab("gpt-2")) + " 10 x7", &out), 2);
  EXPECT_EQ(out.rfind("error: 'x7' is not a token id", 0), 0u) << out;
  EXPECT_EQ(zinc("tokenize -m " + shell_quoted(vocab("gpt-2")), &out), 2);
  EXPECT_EQ(out.rfind("error: ", 0), 0u) << out;
  EXPECT_EQ(zinc("tokenize -m " + shell_quoted(test::data_path("quant/probe-Q8_0.gguf")) + " hi", &out), 1);
  EXPECT_NE(out.find("tokenizer.ggml.model is missing"), std::string::npos) << out;
  EXPECT_EQ(std::count(out.begin(), out.end(), '\n'), 1) << out;
}

}  // namespace
}  // namespace zinc
