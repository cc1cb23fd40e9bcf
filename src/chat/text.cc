#include "chat/text.h"

#include "core/utf8.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "chat/value.h"

namespace zinc::chat::text {

bool is_ascii(std::string_view s) {
  for (unsigned char c : s)
    if (c >= 0x80) return false;
  return true;
}

uint32_t decode(std::string_view s, size_t& i) {
  const auto b0 = static_cast<unsigned char>(s[i]);
  if (b0 < 0x80) {
    ++i;
    return b0;
  }
  const int n = (b0 >= 0xC2 && b0 < 0xE0) ? 1 : (b0 >= 0xE0 && b0 < 0xF0) ? 2 : (b0 >= 0xF0 && b0 < 0xF5) ? 3 : 0;
  if (n > 0 && i + n < s.size()) {
    uint32_t cp = b0 & (0x3F >> n);
    bool ok = true;
    for (int k = 1; k <= n && ok; ++k) {
      const auto b = static_cast<unsigned char>(s[i + k]);
      ok = (b & 0xC0) == 0x80;
      cp = (cp << 6) | (b & 0x3F);
    }
    ok = ok && !(n == 2 && (cp < 0x800 || (cp >= 0xD800 && cp <= 0xDFFF))) &&
         !(n == 3 && (cp < 0x10000 || cp > 0x10FFFF));
    if (ok) {
      i += n + 1;
      return cp;
    }
  }
  ++i;
  return 0xDC00 + b0;  // a lone byte, kept as Python's surrogateescape would
}

uint32_t decode_back(std::string_view s, size_t& i) {
  size_t start = i - 1;
  while (start > 0 && i - start < 4 && (static_cast<unsigned char>(s[start]) & 0xC0) == 0x80) --start;
  size_t j = start;
  uint32_t cp = decode(s, j);
  if (j == i) {
    i = start;
    return cp;
  }
  --i;  // not a well-formed sequence ending here: one byte
  return 0xDC00 + static_cast<unsigned char>(s[i]);
}

void append_utf8(std::string& out, uint32_t cp) {
  if (cp >= 0xDC80 && cp <= 0xDCFF) {
    out += char(cp - 0xDC00);  // a lone byte kept from the input
  } else {
    append_utf8_code_point(out, cp);
  }
}

size_t code_point_count(std::string_view s) {
  if (is_ascii(s)) return s.size();
  size_t n = 0;
  for (size_t i = 0; i < s.size(); ++n) decode(s, i);
  return n;
}

std::vector<size_t> code_point_offsets(std::string_view s) {
  std::vector<size_t> offsets;
  offsets.reserve(s.size() + 1);
  for (size_t i = 0; i < s.size();) {
    offsets.push_back(i);
    decode(s, i);
  }
  offsets.push_back(s.size());
  return offsets;
}

bool is_space(uint32_t cp) {
  if (cp < 0x80) return cp == ' ' || (cp >= 0x09 && cp <= 0x0D) || (cp >= 0x1C && cp <= 0x1F);
  return cp == 0x85 || cp == 0xA0 || cp == 0x1680 || (cp >= 0x2000 && cp <= 0x200A) || cp == 0x2028 ||
         cp == 0x2029 || cp == 0x202F || cp == 0x205F || cp == 0x3000;
}

bool is_digit(uint32_t cp) { return cp >= '0' && cp <= '9'; }

namespace {

// Pairs where the upper-case letter has the even (or odd) code point and the lower-case one follows.
bool in_pair_range(uint32_t cp, uint32_t first, uint32_t last) { return cp >= first && cp <= last; }

}  // namespace

uint32_t to_upper(uint32_t cp) {
  if (cp < 0x80) return cp >= 'a' && cp <= 'z' ? cp - 32 : cp;
  if ((cp >= 0xE0 && cp <= 0xFE && cp != 0xF7)) return cp - 32;
  if (cp == 0xFF) return 0x178;
  if (cp == 0xB5) return 0x39C;
  if (cp == 0x131) return 'I';
  if (cp == 0x17F) return 'S';
  if (in_pair_range(cp, 0x100, 0x137) || in_pair_range(cp, 0x14A, 0x177) || in_pair_range(cp, 0x1E00, 0x1E95) ||
      in_pair_range(cp, 0x1EA0, 0x1EFF) || in_pair_range(cp, 0x460, 0x481) || in_pair_range(cp, 0x48A, 0x4BF) ||
      in_pair_range(cp, 0x4D0, 0x52F))
    return cp % 2 == 1 ? cp - 1 : cp;
  if (in_pair_range(cp, 0x139, 0x148) || in_pair_range(cp, 0x179, 0x17E) || in_pair_range(cp, 0x4C1, 0x4CE))
    return cp % 2 == 0 ? cp - 1 : cp;
  if (cp >= 0x3B1 && cp <= 0x3C9) return cp == 0x3C2 ? 0x3A3 : cp - 32;
  if (cp == 0x3AC) return 0x386;
  if (cp >= 0x3AD && cp <= 0x3AF) return cp - 37;
  if (cp == 0x3CC) return 0x38C;
  if (cp == 0x3CD || cp == 0x3CE) return cp - 63;
  if (cp >= 0x430 && cp <= 0x44F) return cp - 32;
  if (cp >= 0x450 && cp <= 0x45F) return cp - 80;
  if (cp == 0x4CF) return 0x4C0;
  if (cp >= 0x561 && cp <= 0x586) return cp - 48;
  if (cp >= 0xFF41 && cp <= 0xFF5A) return cp - 32;
  return cp;
}

uint32_t to_lower(uint32_t cp) {
  if (cp < 0x80) return cp >= 'A' && cp <= 'Z' ? cp + 32 : cp;
  if (cp >= 0xC0 && cp <= 0xDE && cp != 0xD7) return cp + 32;
  if (cp == 0x178) return 0xFF;
  if (cp == 0x130) return 'i';  // followed by U+0307 in lower()
  if (in_pair_range(cp, 0x100, 0x137) || in_pair_range(cp, 0x14A, 0x177) || in_pair_range(cp, 0x1E00, 0x1E95) ||
      in_pair_range(cp, 0x1EA0, 0x1EFF) || in_pair_range(cp, 0x460, 0x481) || in_pair_range(cp, 0x48A, 0x4BF) ||
      in_pair_range(cp, 0x4D0, 0x52F))
    return cp % 2 == 0 && cp != 0x130 ? cp + 1 : cp;
  if (in_pair_range(cp, 0x139, 0x148) || in_pair_range(cp, 0x179, 0x17E) || in_pair_range(cp, 0x4C1, 0x4CE))
    return cp % 2 == 1 ? cp + 1 : cp;
  if (cp >= 0x391 && cp <= 0x3A9 && cp != 0x3A2) return cp + 32;
  if (cp == 0x386) return 0x3AC;
  if (cp >= 0x388 && cp <= 0x38A) return cp + 37;
  if (cp == 0x38C) return 0x3CC;
  if (cp == 0x38E || cp == 0x38F) return cp + 63;
  if (cp >= 0x410 && cp <= 0x42F) return cp + 32;
  if (cp >= 0x400 && cp <= 0x40F) return cp + 80;
  if (cp == 0x4C0) return 0x4CF;
  if (cp >= 0x531 && cp <= 0x556) return cp + 48;
  if (cp >= 0xFF21 && cp <= 0xFF3A) return cp + 32;
  return cp;
}

bool is_cased(uint32_t cp) { return to_upper(cp) != cp || to_lower(cp) != cp || cp == 0xDF || cp == 0x130; }

bool is_alpha(uint32_t cp) {
  if (cp < 0x80) return (cp | 32) >= 'a' && (cp | 32) <= 'z';
  if (is_cased(cp)) return true;
  if (cp < 0x100) return cp == 0xAA || cp == 0xBA;
  if (cp >= 0xDC80 && cp <= 0xDCFF) return false;
  // Outside the cased scripts: letters unless punctuation, symbols or emoji.
  return !is_space(cp) && !(cp >= 0x2000 && cp <= 0x2BFF) && !(cp >= 0x3000 && cp <= 0x303F) &&
         !(cp >= 0xFE30 && cp <= 0xFE4F) && !(cp >= 0xFF00 && cp <= 0xFF20) && !(cp >= 0x1F000 && cp <= 0x1FAFF);
}

namespace {

void upper_into(uint32_t cp, std::string& out) {
  if (cp == 0xDF) out += "SS";
  else append_utf8(out, to_upper(cp));
}
void lower_into(uint32_t cp, std::string& out) {
  append_utf8(out, to_lower(cp));
  if (cp == 0x130) append_utf8(out, 0x307);  // İ → i̇
}

}  // namespace

std::string upper(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size();) upper_into(decode(s, i), out);
  return out;
}

std::string lower(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size();) lower_into(decode(s, i), out);
  return out;
}

std::string capitalize(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size();) {
    bool first = i == 0;
    uint32_t cp = decode(s, i);
    if (first) upper_into(cp, out);
    else lower_into(cp, out);
  }
  return out;
}

std::string title(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  bool previous_cased = false;
  for (size_t i = 0; i < s.size();) {
    uint32_t cp = decode(s, i);
    if (previous_cased) lower_into(cp, out);
    else upper_into(cp, out);
    previous_cased = is_cased(cp);
  }
  return out;
}

std::string_view strip(std::string_view s, std::optional<std::string_view> chars, bool left, bool right) {
  std::vector<uint32_t> set;
  if (chars)
    for (size_t i = 0; i < chars->size();) set.push_back(decode(*chars, i));
  auto strippable = [&](uint32_t cp) {
    if (!chars) return is_space(cp);
    for (uint32_t c : set)
      if (c == cp) return true;
    return false;
  };
  size_t begin = 0, end = s.size();
  if (left) {
    while (begin < end) {
      size_t next = begin;
      if (!strippable(decode(s, next))) break;
      begin = next;
    }
  }
  if (right) {
    while (end > begin) {
      size_t prev = end;
      if (!strippable(decode_back(s, prev))) break;
      end = prev;
    }
  }
  return s.substr(begin, end - begin);
}

std::vector<std::string> split(std::string_view s, std::optional<std::string_view> sep, int64_t maxsplit,
                               bool from_right) {
  std::vector<std::string> parts;
  if (sep && sep->empty()) fail("empty separator");
  if (maxsplit < 0) maxsplit = INT64_MAX;
  if (sep) {
    if (!from_right) {
      size_t pos = 0;
      while (maxsplit-- > 0) {
        size_t hit = s.find(*sep, pos);
        if (hit == std::string_view::npos) break;
        parts.emplace_back(s.substr(pos, hit - pos));
        pos = hit + sep->size();
      }
      parts.emplace_back(s.substr(pos));
    } else {
      size_t end = s.size();
      while (maxsplit-- > 0 && end >= sep->size()) {
        size_t hit = s.rfind(*sep, end - sep->size());
        if (hit == std::string_view::npos) break;
        parts.emplace_back(s.substr(hit + sep->size(), end - hit - sep->size()));
        end = hit;
      }
      parts.emplace_back(s.substr(0, end));
      std::reverse(parts.begin(), parts.end());
    }
    return parts;
  }
  // Whitespace runs separate the words; ends are trimmed (only at the split side past maxsplit).
  if (!from_right) {
    size_t i = 0;
    while (true) {
      while (i < s.size()) {  // skip whitespace
        size_t next = i;
        if (!is_space(decode(s, next))) break;
        i = next;
      }
      if (i >= s.size()) break;
      if (maxsplit-- <= 0) {
        parts.emplace_back(s.substr(i));
        break;
      }
      size_t start = i;
      while (i < s.size()) {
        size_t next = i;
        if (is_space(decode(s, next))) break;
        i = next;
      }
      parts.emplace_back(s.substr(start, i - start));
    }
  } else {
    size_t i = s.size();
    while (true) {
      while (i > 0) {
        size_t prev = i;
        if (!is_space(decode_back(s, prev))) break;
        i = prev;
      }
      if (i == 0) break;
      if (maxsplit-- <= 0) {
        parts.emplace_back(s.substr(0, i));
        break;
      }
      size_t end = i;
      while (i > 0) {
        size_t prev = i;
        if (is_space(decode_back(s, prev))) break;
        i = prev;
      }
      parts.emplace_back(s.substr(i, end - i));
    }
    std::reverse(parts.begin(), parts.end());
  }
  return parts;
}

std::vector<std::string> splitlines(std::string_view s, bool keepends) {
  std::vector<std::string> lines;
  size_t start = 0;
  for (size_t i = 0; i < s.size();) {
    size_t at = i;
    uint32_t cp = decode(s, i);
    bool brk = cp == '\n' || cp == '\r' || cp == 0x0B || cp == 0x0C || (cp >= 0x1C && cp <= 0x1E) || cp == 0x85 ||
               cp == 0x2028 || cp == 0x2029;
    if (!brk) continue;
    if (cp == '\r' && i < s.size() && s[i] == '\n') ++i;
    lines.emplace_back(s.substr(start, (keepends ? i : at) - start));
    start = i;
  }
  if (start < s.size()) lines.emplace_back(s.substr(start));
  return lines;
}

std::string replace(std::string_view s, std::string_view old_text, std::string_view new_text, int64_t count,
                    size_t max_bytes) {
  if (count < 0) count = INT64_MAX;
  std::string out;
  auto check = [&] {
    if (out.size() > max_bytes) fail(format("replace() result exceeds %zu bytes", max_bytes));
  };
  if (old_text.empty()) {  // inserts before every code point and at the end
    size_t i = 0;
    while (i < s.size()) {
      if (count-- > 0) out.append(new_text);
      size_t start = i;
      decode(s, i);
      out.append(s.substr(start, i - start));
      check();
    }
    if (count > 0) out.append(new_text);
    check();
    return out;
  }
  size_t pos = 0;
  while (count-- > 0) {
    size_t hit = s.find(old_text, pos);
    if (hit == std::string_view::npos) break;
    out.append(s.substr(pos, hit - pos));
    out.append(new_text);
    check();
    pos = hit + old_text.size();
  }
  out.append(s.substr(pos));
  check();
  return out;
}

std::string pad(const std::string& s, int64_t width, char align, const std::string& fill) {
  int64_t n = int64_t(text::code_point_count(s));
  if (width <= n) return s;
  if (width > int64_t(64u << 20)) fail(format("field width %lld is too large", (long long)width));
  int64_t total = width - n, left = 0;
  if (align == '>') left = total;
  else if (align == '^') left = total / 2;
  else if (align == 'c') left = total / 2 + (total & width & 1);
  std::string out;
  for (int64_t i = 0; i < left; ++i) out += fill;
  out += s;
  for (int64_t i = 0; i < total - left; ++i) out += fill;
  return out;
}


std::string float_repr(double d) {
  if (std::isnan(d)) return "nan";
  if (std::isinf(d)) return d < 0 ? "-inf" : "inf";
  char buf[64];
  auto res = std::to_chars(buf, buf + sizeof buf, d, std::chars_format::scientific);
  std::string_view sci(buf, res.ptr - buf);  // "-1.2345e+17" (shortest round-trip digits)
  bool negative = sci[0] == '-';
  if (negative) sci.remove_prefix(1);
  size_t e = sci.find('e');
  std::string digits;
  for (char c : sci.substr(0, e))
    if (c != '.') digits += c;
  int exponent = std::atoi(std::string(sci.substr(e + 1)).c_str());
  std::string out = negative ? "-" : "";
  if (exponent >= -4 && exponent < 16) {
    if (exponent >= 0) {
      if (digits.size() <= size_t(exponent) + 1) {
        out += digits + std::string(exponent + 1 - digits.size(), '0') + ".0";
      } else {
        out += digits.substr(0, exponent + 1) + "." + digits.substr(exponent + 1);
      }
    } else {
      out += "0." + std::string(-exponent - 1, '0') + digits;
    }
  } else {
    out += digits.substr(0, 1);
    if (digits.size() > 1) out += "." + digits.substr(1);
    char exp[16];
    std::snprintf(exp, sizeof exp, "e%c%02d", exponent < 0 ? '-' : '+', std::abs(exponent));
    out += exp;
  }
  return out;
}

std::string html_escape(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&#34;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  return out;
}

size_t partial_tail(std::string_view s, std::string_view tag) {
  for (size_t n = std::min(s.size(), tag.size() - 1); n > 0; --n)
    if (s.substr(s.size() - n) == tag.substr(0, n)) return n;
  return 0;
}

}  // namespace zinc::chat::text
