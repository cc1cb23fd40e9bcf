#include "tokenizer/pre_tokenizer.h"

#include <gtest/gtest.h>

#include <random>

#include "tokenizer/unicode.h"

namespace zinc::tokenizer {
namespace {

std::vector<std::string> split(std::string_view pre, std::string_view text) {
  const PreTokenizerSpec* spec = find_pre_tokenizer(pre);
  EXPECT_NE(spec, nullptr) << pre;
  if (!spec) return {};
  auto p = PreTokenizer::compile(spec->regexes);
  EXPECT_TRUE(p.ok()) << p.status().message();
  std::vector<std::string_view> pieces;
  p->split(text, &pieces);
  return std::vector<std::string>(pieces.begin(), pieces.end());
}

using Pieces = std::vector<std::string>;

TEST(PreTokenizer, KnowsTheRequiredNames) {
  for (auto name : {"default", "gpt-2", "llama-bpe", "llama3", "qwen2", "qwen35", "deepseek-r1-qwen", "deepseek-coder",
                    "deepseek-llm", "falcon", "mpt", "starcoder", "refact", "command-r", "smollm", "gpt-4o"})
    EXPECT_NE(find_pre_tokenizer(name), nullptr) << name;
  EXPECT_EQ(find_pre_tokenizer(""), find_pre_tokenizer("default"));
  EXPECT_EQ(find_pre_tokenizer("no-such-pre"), nullptr);
  EXPECT_TRUE(find_pre_tokenizer("llama-bpe")->ignore_merges);
  EXPECT_FALSE(find_pre_tokenizer("qwen2")->clean_spaces);
}

TEST(PreTokenizer, EveryKnownRegexCompiles) {
  for (const std::string& name : known_pre_tokenizers()) {
    auto p = PreTokenizer::compile(find_pre_tokenizer(name)->regexes);
    EXPECT_TRUE(p.ok()) << name << ": " << p.status().message();
  }
}

TEST(PreTokenizer, Gpt2) {
  EXPECT_EQ(split("gpt-2", "Hello world's  123!!"), (Pieces{"Hello", " world", "'s", " ", " 123", "!!"}));
  EXPECT_EQ(split("gpt-2", "a\t\tb  "), (Pieces{"a", "\t", "\t", "b", "  "}));
}

TEST(PreTokenizer, DigitGrouping) {
  EXPECT_EQ(split("llama3", "x 1234567"), (Pieces{"x", " ", "123", "456", "7"}));
  EXPECT_EQ(split("qwen2", "x 123"), (Pieces{"x", " ", "1", "2", "3"}));
  EXPECT_EQ(split("starcoder", "a12 b"), (Pieces{"a", "1", "2", " b"}));
  EXPECT_EQ(split("falcon", "12345 x"), (Pieces{"123", "45", " x"}));
}

TEST(PreTokenizer, Llama3ContractionsAndNewlines) {
  EXPECT_EQ(split("llama3", "I'M here\n\n  ok"), (Pieces{"I", "'M", " here", "\n\n", " ", " ok"}));
  EXPECT_EQ(split("llama3", "x...\n"), (Pieces{"x", "...\n"}));
}

TEST(PreTokenizer, Qwen35KeepsCombiningMarksInWords) {
  const std::string word = "e\xCC\x81t\xC3\xA9";  // e + U+0301, t, é
  EXPECT_EQ(split("qwen35", " " + word), (Pieces{" " + word}));
  // qwen2: the mark is not a letter, so it becomes the optional prefix of the next word.
  EXPECT_EQ(split("qwen2", " " + word), (Pieces{" e", "\xCC\x81t\xC3\xA9"}));
}

TEST(PreTokenizer, Gpt4oSplitsCamelCase) {
  EXPECT_EQ(split("gpt-4o", "HelloWorld's ABC"), (Pieces{"Hello", "World's", " ABC"}));
}

TEST(PreTokenizer, WhitespaceIsUnicodeWhiteSpace) {
  const std::string ideographic_space = "\xE3\x80\x80", nel = "\xC2\x85";
  EXPECT_EQ(split("gpt-2", "a" + ideographic_space + ideographic_space + "b"),
            (Pieces{"a", ideographic_space, ideographic_space, "b"}));  // " ?" is only U+0020
  EXPECT_EQ(split("gpt-2", "a" + nel), (Pieces{"a", nel}));
}

TEST(PreTokenizer, DeepseekLlmLetterClassesAndCjk) {
  EXPECT_EQ(split("deepseek-llm", "Hi \xE4\xB8\xAD\xE6\x96\x87 42"),
            (Pieces{"Hi", " ", "\xE4\xB8\xAD\xE6\x96\x87", " ", "42"}));
}

// Whatever the input, the pieces cover it exactly, in order, without empty pieces.
TEST(PreTokenizer, PiecesCoverRandomInput) {
  std::mt19937 rng(3);
  const char* alphabet[] = {"a", "Z", " ", "  ", "\n", "\r\n", "\t", "1", "23", "'s", "'LL", ".", "!?", "\xC3\xA9",
                            "\xE4\xB8\xAD", "\xF0\x9F\x98\x80", "\xCC\x81", "\xE3\x80\x80", "\xFF", "\x80", "\xE4\xB8"};
  for (const std::string& name : known_pre_tokenizers()) {
    auto p = PreTokenizer::compile(find_pre_tokenizer(name)->regexes);
    ASSERT_TRUE(p.ok());
    for (int iter = 0; iter < 50; ++iter) {
      std::string text;
      int n = int(rng() % 40);
      for (int i = 0; i < n; ++i) text += alphabet[rng() % std::size(alphabet)];
      std::vector<std::string_view> pieces;
      p->split(text, &pieces);
      std::string joined;
      for (auto piece : pieces) {
        EXPECT_FALSE(piece.empty()) << name;
        EXPECT_EQ(piece.data(), text.data() + joined.size()) << name;
        joined += piece;
      }
      EXPECT_EQ(joined, text) << name;
    }
  }
}

TEST(PreTokenizer, LongWhitespaceRunsDoNotExhaustTheMatcher) {
  std::string text = "a" + std::string(200000, ' ') + "b" + std::string(100000, '\n');
  for (auto name : {"gpt-2", "llama3", "qwen35", "gpt-4o", "default"}) {
    std::vector<std::string> pieces = split(name, text);
    std::string joined;
    for (const auto& p : pieces) joined += p;
    EXPECT_EQ(joined, text) << name;
    EXPECT_LE(pieces.size(), 6u) << name;
  }
}

}  // namespace
}  // namespace zinc::tokenizer
