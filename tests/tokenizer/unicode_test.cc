#include "tokenizer/unicode.h"

#include <gtest/gtest.h>

#include <random>

#include "tokenizer/unicode_tables.h"

namespace zinc::tokenizer {
namespace {

TEST(ByteMap, IsTheGpt2Table) {
  const ByteMap& m = ByteMap::get();
  EXPECT_EQ(m.code_point(' '), 0x120u);   // Ġ
  EXPECT_EQ(m.code_point('\n'), 0x10Au);  // Ċ
  EXPECT_EQ(m.code_point('\t'), 0x109u);  // ĉ
  EXPECT_EQ(m.code_point('A'), uint32_t('A'));
  EXPECT_EQ(m.code_point(0xAD), 0x143u);  // the last of the 68 remapped bytes
  EXPECT_EQ(m.encoded(' '), "\xC4\xA0");
  for (int b = 0; b < 256; ++b) {
    EXPECT_EQ(m.byte_of(m.code_point(uint8_t(b))), b);
    size_t pos = 0;
    EXPECT_EQ(decode_utf8(m.encoded(uint8_t(b)), &pos), m.code_point(uint8_t(b)));
  }
  EXPECT_EQ(m.byte_of(0x144), -1);
}

TEST(Utf8, EncodeDecodeRandomCodePoints) {
  std::mt19937 rng(7);
  std::uniform_int_distribution<uint32_t> dist(0, 0x10FFFF);
  for (int i = 0; i < 20000; ++i) {
    uint32_t cp = dist(rng);
    if (cp >= 0xD800 && cp <= 0xDFFF) continue;
    std::string s = utf8_from_code_point(cp);
    EXPECT_TRUE(is_valid_utf8(s));
    size_t pos = 0;
    EXPECT_EQ(decode_utf8(s, &pos), cp);
    EXPECT_EQ(pos, s.size());
    EXPECT_EQ(utf8_sequence_bytes(uint8_t(s[0])), s.size());
  }
}

TEST(Utf8, RejectsIllFormedSequences) {
  for (std::string bad : {"\x80", "\xC0\xAF", "\xE0\x80\xAF", "\xED\xA0\x80", "\xF4\x90\x80\x80", "\xFF", "a\xC3"})
    EXPECT_FALSE(is_valid_utf8(bad)) << bad;
  size_t pos = 0;
  EXPECT_EQ(decode_utf8("\xFF" "a", &pos), 0xFFFDu);
  EXPECT_EQ(pos, 1u);
}

TEST(Utf8, CompletePrefixHoldsBackOnlyAnUnfinishedCharacter) {
  const std::string han = "\xE4\xB8\xAD";            // 中
  const std::string emoji = "\xF0\x9F\x98\x80";      // 😀
  EXPECT_EQ(utf8_complete_prefix("ab"), 2u);
  EXPECT_EQ(utf8_complete_prefix("ab" + han.substr(0, 1)), 2u);
  EXPECT_EQ(utf8_complete_prefix("ab" + han.substr(0, 2)), 2u);
  EXPECT_EQ(utf8_complete_prefix("ab" + han), 5u);
  EXPECT_EQ(utf8_complete_prefix(emoji.substr(0, 3)), 0u);
  EXPECT_EQ(utf8_complete_prefix(han + emoji), 7u);
  EXPECT_EQ(utf8_complete_prefix("a\xE4z"), 3u);  // invalid, not incomplete: nothing to wait for
  EXPECT_EQ(sanitize_utf8("a\xE4z"), "a\xEF\xBF\xBDz");
  EXPECT_EQ(sanitize_utf8("a" + emoji.substr(0, 3)), "a\xEF\xBF\xBD");
  EXPECT_EQ(sanitize_utf8(han), han);
}

TEST(UnicodeTables, ClassesLowercaseAndAccents) {
  using internal::CharClass;
  EXPECT_EQ(internal::char_class(' '), CharClass::kWhitespace);
  EXPECT_EQ(internal::char_class(0x3000), CharClass::kWhitespace);
  EXPECT_EQ(internal::char_class(0x0B), CharClass::kControl);
  EXPECT_EQ(internal::char_class(0x200B), CharClass::kControl);  // zero width space is Cf
  EXPECT_EQ(internal::char_class('$'), CharClass::kPunctuation);
  EXPECT_EQ(internal::char_class(0x3002), CharClass::kPunctuation);  // 。
  EXPECT_EQ(internal::char_class(0x0301), CharClass::kNonspacingMark);
  EXPECT_EQ(internal::char_class('a'), CharClass::kOther);
  EXPECT_EQ(internal::char_class(0x10FFFF), CharClass::kControl);  // unassigned (Cn)
  EXPECT_EQ(internal::simple_lowercase('Q'), uint32_t('q'));
  EXPECT_EQ(internal::simple_lowercase(0x0416), 0x0436u);  // Ж -> ж
  EXPECT_EQ(internal::simple_lowercase(0x1E9E), 0x00DFu);  // ẞ -> ß
  std::u32string out;
  internal::append_without_accents(0x00E9, &out);  // é -> e
  internal::append_without_accents(0x1EC7, &out);  // ệ -> e
  internal::append_without_accents(0xD55C, &out);  // 한 -> ᄒ ᅡ ᆫ
  EXPECT_EQ(out, std::u32string(U"ee\u1112\u1161\u11ab"));
}

}  // namespace
}  // namespace zinc::tokenizer
