// WordPiece as Hugging Face's BertNormalizer + BertPreTokenizer + WordPiece model do it. GGUF
// stores word-initial pieces with a leading U+2581 and continuation pieces without "##".
#include <string>

#include "tokenizer/models.h"
#include "tokenizer/unicode.h"
#include "tokenizer/unicode_tables.h"

namespace zinc::tokenizer::internal {
namespace {

constexpr size_t kMaxWordChars = 100;  // longer words become [UNK]

// CJK ideographs, which BERT isolates as words (the ranges of BERT's _is_chinese_char).
bool is_cjk(uint32_t cp) {
  return (cp >= 0x4E00 && cp <= 0x9FFF) || (cp >= 0x3400 && cp <= 0x4DBF) || (cp >= 0x20000 && cp <= 0x2A6DF) ||
         (cp >= 0x2A700 && cp <= 0x2B73F) || (cp >= 0x2B740 && cp <= 0x2B81F) || (cp >= 0x2B920 && cp <= 0x2CEAF) ||
         (cp >= 0xF900 && cp <= 0xFAFF) || (cp >= 0x2F800 && cp <= 0x2FA1F);
}

void encode_word(const Vocab& vocab, const std::u32string& word, std::vector<int32_t>* out) {
  const size_t start = out->size();
  if (word.size() > kMaxWordChars) {
    if (vocab.special().unk != kNoToken) out->push_back(vocab.special().unk);
    return;
  }
  std::string text = "\xE2\x96\x81";
  std::vector<size_t> ends;  // byte offset after each character
  for (char32_t cp : word) {
    append_utf8(text, cp);
    ends.push_back(text.size());
  }
  size_t pos = 0;  // byte offset; the first piece includes the U+2581 marker
  size_t first_char = 0;
  while (first_char < ends.size()) {
    int32_t found = kNoToken;
    size_t k = ends.size();
    for (; k > first_char; --k) {
      found = vocab.find(std::string_view(text).substr(pos, ends[k - 1] - pos));
      if (found != kNoToken) break;
    }
    if (found == kNoToken) {
      out->resize(start);
      if (vocab.special().unk != kNoToken) out->push_back(vocab.special().unk);
      return;
    }
    out->push_back(found);
    pos = ends[k - 1];
    first_char = k;
  }
}

}  // namespace

void wordpiece_encode(const Vocab& vocab, std::string_view text, std::vector<int32_t>* out) {
  const bool lowercase = vocab.flags().lowercase, strip = vocab.flags().strip_accents;
  std::u32string word, expanded;
  auto finish_word = [&] {
    if (!word.empty()) encode_word(vocab, word, out);
    word.clear();
  };
  for (size_t pos = 0; pos < text.size();) {
    uint32_t cp = decode_utf8(text, &pos);
    CharClass cls = char_class(cp);
    if (cp == 0 || cp == 0xFFFD || cls == CharClass::kControl) continue;
    if (cls == CharClass::kWhitespace) {
      finish_word();
      continue;
    }
    if (is_cjk(cp)) {
      finish_word();
      word.push_back(cp);
      finish_word();
      continue;
    }
    expanded.clear();
    if (strip)
      append_without_accents(cp, &expanded);
    else
      expanded.push_back(cp);
    for (char32_t c : expanded) {
      if (lowercase) c = simple_lowercase(c);
      if (char_class(c) == CharClass::kPunctuation) {
        finish_word();
        word.push_back(c);
        finish_word();
      } else {
        word.push_back(c);
      }
    }
  }
  finish_word();
}

}  // namespace zinc::tokenizer::internal
