// Property: on byte-level BPE vocabularies, decode(encode(x)) == x for any valid UTF-8 text.
#include <gtest/gtest.h>

#include <array>
#include <cstdio>
#include <random>

#include "gguf/file.h"
#include "support/test_data.h"
#include "tokenizer/tokenizer.h"
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
