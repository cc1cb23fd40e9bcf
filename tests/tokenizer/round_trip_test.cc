// Property: on byte-level BPE vocabularies, decode(encode(x)) == x for any valid UTF-8 text.
#include <gtest/gtest.h>

#include <array>
#include <cstdio>
#include <random>

#include "gguf/file.h"
#include "support/test_data.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/models.h"
#include "tokenizer/unicode.h"

namespace zinc::tokenizer {
namespace {

bool all_spellable(uint32_t cp, const std::array<bool, 256>& spellable) {
  for (char c : utf8_from_code_point(cp))
    if (!spellable[uint8_t(c)]) return false;
  return true;
}

// Random text from pieces and random scalar values whose UTF-8 bytes the vocabulary can spell
// (falcon, refact, starcoder and mpt lack tokens for a few bytes, e.g. 0xF1 or 0xF2, and drop
// them as llama.cpp and Hugging Face do).
std::string random_text(std::mt19937& rng, const std::array<bool, 256>& spellable) {
  static const char* const kPieces[] = {" ", "  ", "\t", "\n", "\r\n", "\n\n", "\xC2\xA0", "\xE3\x80\x80", "0",
                                        "7",  "123", "3.14", ".", ",", "!?", "'s", "'LL", "\"", "(", ")", "{",
                                        "}", "<", ">", "-", "_", "#", "@", "~", "`", "Hello", "world", "the"};
  std::uniform_int_distribution<int> kind(0, 9);
  std::string s;
  const int n = int(rng() % 48);
  for (int i = 0; i < n; ++i) {
    int k = kind(rng);
    if (k < 5) {
      s += kPieces[rng() % std::size(kPieces)];
      continue;
    }
    // A random scalar value: any plane (0-16), or concentrated in the BMP scripts.
    uint32_t cp;
    do {
      if (k < 7)
        cp = 0x80 + rng() % (0x3000 - 0x80);
      else if (k < 9)
        cp = rng() % 0x10000;
      else
        cp = rng() % 0x110000;
    } while ((cp >= 0xD800 && cp <= 0xDFFF) || cp == 0 || !all_spellable(cp, spellable));
    append_utf8(s, cp);
  }
  return s;
}

std::string escaped(const std::string& s) {
  std::string out;
  char buf[8];
  for (unsigned char c : s) {
    if (c >= 0x20 && c < 0x7F && c != '\\') {
      out += char(c);
    } else {
      std::snprintf(buf, sizeof buf, "\\x%02X", c);
      out += buf;
    }
  }
  return out;
}

class RoundTrip : public testing::TestWithParam<std::string> {};

TEST_P(RoundTrip, DecodeOfEncodeIsIdentity) {
  ZINC_REQUIRE_TEST_DATA();
  auto file = gguf::open_file(test::data_path("vocab/ggml-vocab-" + GetParam() + ".gguf"));
  ASSERT_TRUE(file.ok()) << file.status().message();
  auto tok = Tokenizer::load(**file);
  ASSERT_TRUE(tok.ok()) << tok.status().message();
  ASSERT_EQ((*tok)->vocab().kind(), VocabKind::kBpe);
  DecodeOptions exact;
  exact.clean_spaces = false;
  std::array<bool, 256> spellable;
  for (int b = 0; b < 256; ++b) spellable[b] = (*tok)->vocab().find(ByteMap::get().encoded(uint8_t(b))) != kNoToken;
  std::mt19937 rng(1234);
  int failures = 0;
  for (int i = 0; i < 300 && failures < 5; ++i) {
    std::string text = random_text(rng, spellable);
    ASSERT_TRUE(is_valid_utf8(text));
    std::vector<int32_t> ids = (*tok)->encode(text, false, false);
    auto back = (*tok)->decode(ids, exact);
    ASSERT_TRUE(back.ok()) << back.status().message();
    if (*back != text) {
      ++failures;
      ADD_FAILURE() << GetParam() << ": \"" << escaped(text) << "\" came back as \"" << escaped(*back) << "\"";
    }
    // Streaming the same ids gives the same text.
    StreamingDecoder stream(**tok);
    std::string streamed;
    for (int32_t id : ids) streamed += stream.push(id);
    streamed += stream.flush();
    EXPECT_EQ(streamed, text);
  }
}

INSTANTIATE_TEST_SUITE_P(ByteLevel, RoundTrip,
                         testing::Values("gpt-2", "deepseek-coder", "deepseek-llm", "falcon", "llama3", "mpt", "qwen3",
                                         "refact", "starcoder"),
                         [](const auto& info) {
                           std::string name = info.param;
                           for (char& c : name)
                             if (c == '-') c = '_';
                           return name;
                         });

}  // namespace
}  // namespace zinc::tokenizer

namespace zinc::tokenizer {
namespace {

// Words of letters, digits, CJK, emoji and punctuation separated by single spaces (runs of
// whitespace are user-defined tokens in some SentencePiece vocabularies, e.g. gemma3).
std::string random_words(std::mt19937& rng) {
  static const char* const kChars[] = {"a", "e", "s", "T", "x", "0", "7", ".", ",", ">", "<", "/", "-", "'",
                                       "\xC3\xA9", "\xE4\xB8\xAD", "\xE6\x96\x87", "\xD0\xB6", "\xF0\x9F\x98\x80"};
  std::string s;
  const int n_words = 1 + int(rng() % 12);
  for (int w = 0; w < n_words; ++w) {
    if (w) s += ' ';
    const int n = 1 + int(rng() % 6);
    for (int i = 0; i < n; ++i) s += kChars[rng() % std::size(kChars)];
  }
  return s;
}

// SentencePiece vocabularies are merged word by word (cut before "▁" where no token joins across);
// that must give exactly what merging the whole text at once gives.
class SpmWords : public testing::TestWithParam<std::string> {};

TEST_P(SpmWords, WordByWordMergingEqualsWholeText) {
  ZINC_REQUIRE_TEST_DATA();
  auto file = gguf::open_file(test::data_path("vocab/ggml-vocab-" + GetParam() + ".gguf"));
  ASSERT_TRUE(file.ok());
  auto tok = Tokenizer::load(**file);
  ASSERT_TRUE(tok.ok()) << tok.status().message();
  const Vocab& v = (*tok)->vocab();
  std::array<int32_t, 256> bytes;
  static const char* kHex = "0123456789ABCDEF";
  for (int b = 0; b < 256; ++b) bytes[b] = v.find(std::string("<0x") + kHex[b >> 4] + kHex[b & 15] + ">");
  std::mt19937 rng(99);
  int compared = 0;
  for (int i = 0; i < 200; ++i) {
    std::string text = random_words(rng) + " a> </x> y";  // gemma3 has the token ">▁</"
    std::string escaped = v.flags().add_space_prefix ? "\xE2\x96\x81" : "";
    for (char c : text) escaped += c == ' ' ? std::string("\xE2\x96\x81") : std::string(1, c);
    std::vector<int32_t> whole;
    internal::spm_encode(v, bytes, escaped, &whole);
    // Only user-defined-free text is comparable (those are cut out before merging).
    std::vector<int32_t> ids = (*tok)->encode(text, false, false);
    bool has_user_defined = false;
    for (int32_t id : ids) has_user_defined |= v.has_attr(id, kAttrUserDefined);
    if (has_user_defined) continue;
    EXPECT_EQ(ids, whole) << escaped;
    ++compared;
  }
  EXPECT_GE(compared, 20);
}

INSTANTIATE_TEST_SUITE_P(Shared, SpmWords, testing::Values("llama-spm", "phi-3", "gemma3"), [](const auto& info) {
  std::string name = info.param;
  for (char& c : name)
    if (c == '-') c = '_';
  return name;
});

}  // namespace
}  // namespace zinc::tokenizer
