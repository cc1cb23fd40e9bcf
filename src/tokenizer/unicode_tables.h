// Unicode facts for the WordPiece (BERT) normalizer, generated from the Unicode database by
// scripts/gen_unicode_tables.py (internal to the tokenizer layer).
#pragma once

#include <cstdint>
#include <string>

namespace zinc::tokenizer::internal {

enum class CharClass : uint8_t {
  kOther = 0,
  kWhitespace = 1,      // White_Space outside category C, plus \t \n \r
  kControl = 2,         // category C (Cc Cf Cs Co Cn) except \t \n \r
  kPunctuation = 3,     // category P, or ASCII punctuation (which includes $ + < = > ^ ` | ~)
  kNonspacingMark = 4,  // category Mn
};

CharClass char_class(uint32_t cp);
// One-to-one lowercase mapping (code points whose lowercase is longer map to themselves).
uint32_t simple_lowercase(uint32_t cp);
// Appends NFD(cp) without its nonspacing marks (BERT strip_accents).
void append_without_accents(uint32_t cp, std::u32string* out);

}  // namespace zinc::tokenizer::internal
