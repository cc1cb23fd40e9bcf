// UTF-8 helpers and the GPT-2 byte <-> code point table used by byte-level BPE vocabularies.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace zinc::tokenizer {

// Bytes of the UTF-8 sequence that starts with `lead` (1 for continuation and invalid bytes, as
// llama.cpp splits): 0xxxxxxx 1, 110xxxxx 2, 1110xxxx 3, 11110xxx 4.
inline size_t utf8_sequence_bytes(uint8_t lead) {
  static constexpr uint8_t kLengths[16] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 3, 4};
  return kLengths[lead >> 4];
}

// Appends the UTF-8 encoding of code point `cp` (must be <= 0x10FFFF).
void append_utf8(std::string& out, uint32_t cp);
std::string utf8_from_code_point(uint32_t cp);

// Decodes one code point at text[*pos] and advances *pos. Invalid or truncated sequences decode
// as U+FFFD and advance one byte.
uint32_t decode_utf8(std::string_view text, size_t* pos);

// Length of the longest prefix of `bytes` that ends on a complete UTF-8 character boundary and
// leaves only a possibly-incomplete (but so far valid) sequence after it. Used by streaming
// decoders to hold back the tail of a character split across tokens.
size_t utf8_complete_prefix(std::string_view bytes);

// `bytes` with every ill-formed sequence (and a truncated one at the end) replaced by U+FFFD.
std::string sanitize_utf8(std::string_view bytes);

// True when `text` is well-formed UTF-8 (no overlongs, no surrogates, <= U+10FFFF).
bool is_valid_utf8(std::string_view text);

// GPT-2 byte-level encoding: every byte maps to one printable code point.
class ByteMap {
 public:
  static const ByteMap& get();
  // The UTF-8 text of the code point standing for byte `b`.
  std::string_view encoded(uint8_t b) const { return {encoded_[b].bytes, encoded_[b].n_bytes}; }
  uint32_t code_point(uint8_t b) const { return code_point_[b]; }
  // The byte a code point stands for, or -1 when it is not in the table.
  int byte_of(uint32_t cp) const { return cp < kMaxCodePoint ? byte_of_[cp] : -1; }

 private:
  ByteMap();
  static constexpr uint32_t kMaxCodePoint = 0x144;
  struct Encoded {
    char bytes[2];
    uint8_t n_bytes;
  };
  Encoded encoded_[256];
  uint32_t code_point_[256];
  int16_t byte_of_[kMaxCodePoint];
};

}  // namespace zinc::tokenizer
