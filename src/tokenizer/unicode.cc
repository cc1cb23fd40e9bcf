#include "tokenizer/unicode.h"

#include "core/utf8.h"

#include "core/check.h"

namespace zinc::tokenizer {

void append_utf8(std::string& out, uint32_t cp) {
  ZINC_DCHECK(cp <= 0x10FFFF);
  append_utf8_code_point(out, cp);
}

std::string utf8_from_code_point(uint32_t cp) {
  std::string s;
  append_utf8(s, cp);
  return s;
}

namespace {

// Length of the valid UTF-8 sequence at text[pos], 0 when invalid, or -(needed bytes) when the
// text ends inside a sequence that is valid so far.
int valid_sequence_at(std::string_view text, size_t pos, uint32_t* cp_out) {
  const auto* s = reinterpret_cast<const uint8_t*>(text.data());
  const size_t n = text.size();
  uint8_t b0 = s[pos];
  if (b0 < 0x80) {
    *cp_out = b0;
    return 1;
  }
  int len;
  uint32_t cp;
  uint8_t lo = 0x80, hi = 0xBF;  // allowed range of the second byte
  if (b0 >= 0xC2 && b0 <= 0xDF) {
    len = 2, cp = b0 & 0x1F;
  } else if (b0 >= 0xE0 && b0 <= 0xEF) {
    len = 3, cp = b0 & 0x0F;
    if (b0 == 0xE0) lo = 0xA0;
    if (b0 == 0xED) hi = 0x9F;  // no surrogates
  } else if (b0 >= 0xF0 && b0 <= 0xF4) {
    len = 4, cp = b0 & 0x07;
    if (b0 == 0xF0) lo = 0x90;
    if (b0 == 0xF4) hi = 0x8F;
  } else {
    return 0;
  }
  for (int i = 1; i < len; ++i) {
    if (pos + i >= n) return -len;
    uint8_t b = s[pos + i];
    if (i == 1 ? (b < lo || b > hi) : (b < 0x80 || b > 0xBF)) return 0;
    cp = (cp << 6) | (b & 0x3F);
  }
  *cp_out = cp;
  return len;
}

}  // namespace

uint32_t decode_utf8(std::string_view text, size_t* pos) {
  uint32_t cp = 0;
  int len = valid_sequence_at(text, *pos, &cp);
  if (len <= 0) {
    *pos += 1;
    return 0xFFFD;
  }
  *pos += size_t(len);
  return cp;
}

size_t utf8_complete_prefix(std::string_view bytes) {
  // Only the last 3 bytes can start an incomplete sequence.
  size_t n = bytes.size();
  size_t start = n > 3 ? n - 3 : 0;
  for (size_t i = start; i < n; ++i) {
    uint32_t cp;
    auto lead = uint8_t(bytes[i]);
    if (lead < 0xC0) continue;
    if (valid_sequence_at(bytes, i, &cp) < 0) return i;
  }
  return n;
}

bool is_valid_utf8(std::string_view text) {
  size_t pos = 0;
  while (pos < text.size()) {
    uint32_t cp;
    int len = valid_sequence_at(text, pos, &cp);
    if (len <= 0) return false;
    pos += size_t(len);
  }
  return true;
}

std::string sanitize_utf8(std::string_view bytes) {
  if (is_valid_utf8(bytes)) return std::string(bytes);
  std::string out;
  size_t pos = 0;
  while (pos < bytes.size()) {
    uint32_t cp;
    int len = valid_sequence_at(bytes, pos, &cp);
    if (len > 0) {
      out.append(bytes.substr(pos, size_t(len)));
      pos += size_t(len);
    } else {
      out += "\xEF\xBF\xBD";
      if (len < 0) break;  // a truncated character at the end: one replacement for all of it
      pos += 1;
    }
  }
  return out;
}

const ByteMap& ByteMap::get() {
  static const ByteMap map;
  return map;
}

ByteMap::ByteMap() {
  for (auto& b : byte_of_) b = -1;
  uint32_t next_extra = 0x100;
  for (int b = 0; b < 256; ++b) {
    bool printable = (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
    uint32_t cp = printable ? uint32_t(b) : next_extra++;
    code_point_[b] = cp;
    byte_of_[cp] = int16_t(b);
    std::string s = utf8_from_code_point(cp);
    encoded_[b].n_bytes = uint8_t(s.size());
    for (size_t i = 0; i < s.size(); ++i) encoded_[b].bytes[i] = s[i];
  }
  ZINC_CHECK(next_extra == kMaxCodePoint);
}

}  // namespace zinc::tokenizer
