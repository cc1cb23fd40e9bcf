// Python str semantics over UTF-8 bytes: code points, whitespace, case mapping, float repr.
// A byte that is not valid UTF-8 counts as one code point and is copied through unchanged.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace zinc::chat::text {

bool is_ascii(std::string_view s);
// Decodes the code point at s[i] and advances i (an invalid byte decodes as 0xDC00 + byte).
uint32_t decode(std::string_view s, size_t& i);
// Decodes the code point that ends at s[i-1] and moves i back to its start.
uint32_t decode_back(std::string_view s, size_t& i);
void append_utf8(std::string& out, uint32_t cp);
size_t code_point_count(std::string_view s);
// Byte offsets of each code point start, plus s.size() at the end (size = count + 1).
std::vector<size_t> code_point_offsets(std::string_view s);

bool is_space(uint32_t cp);  // str.isspace()
bool is_alpha(uint32_t cp);  // letters of the scripts case mapping knows, and CJK / other non-ASCII letters
bool is_digit(uint32_t cp);  // ASCII digits
uint32_t to_upper(uint32_t cp);
uint32_t to_lower(uint32_t cp);
bool is_cased(uint32_t cp);

std::string upper(std::string_view s);  // str.upper() (ß becomes "SS")
std::string lower(std::string_view s);
std::string capitalize(std::string_view s);  // str.capitalize()
std::string title(std::string_view s);       // str.title()

// str.strip(chars) / lstrip / rstrip; `chars` absent means whitespace.
std::string_view strip(std::string_view s, std::optional<std::string_view> chars, bool left, bool right);
// str.split(sep, maxsplit) and str.rsplit; no sep splits on whitespace runs and drops empty parts.
std::vector<std::string> split(std::string_view s, std::optional<std::string_view> sep, int64_t maxsplit,
                               bool from_right);
std::vector<std::string> splitlines(std::string_view s, bool keepends);  // str.splitlines()
// str.replace(old, new, count); fails past `max_bytes` of result.
std::string replace(std::string_view s, std::string_view old_text, std::string_view new_text, int64_t count,
                    size_t max_bytes);

// Pads to `width` code points; align '<' '>' '^' (str.format) or 'c' (str.center, which puts an odd
// space on the left when width is odd). Fails past 64 MiB.
std::string pad(const std::string& s, int64_t width, char align, const std::string& fill);

// Length of the longest tail of `s` that is a proper prefix of `tag`: what a streaming filter
// holds back, since the next text may complete the tag.
size_t partial_tail(std::string_view s, std::string_view tag);

std::string float_repr(double d);  // repr(float): shortest round-trip digits, Python's layout
std::string html_escape(std::string_view s);  // markupsafe.escape: & < > " '

}  // namespace zinc::chat::text
