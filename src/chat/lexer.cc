#include "chat/lexer.h"

#include <algorithm>
#include <cerrno>
#include <cstdlib>

#include "chat/text.h"
#include "chat/value.h"

namespace zinc::chat {
namespace {

[[noreturn]] void syntax_error(int line, std::string message) { throw TemplateError{std::move(message), line}; }

bool is_name_start(unsigned char c) { return c == '_' || unsigned((c | 32) - 'a') < 26u || c >= 0x80; }
bool is_name_char(unsigned char c) { return is_name_start(c) || unsigned(c - '0') < 10u; }
bool is_dec(char c) { return c >= '0' && c <= '9'; }

class Lexer {
 public:
  explicit Lexer(std::string_view source) {
    // Jinja2 reads \r\n and \r as \n and drops one trailing newline.
    src_.reserve(source.size());
    for (size_t i = 0; i < source.size(); ++i) {
      if (source[i] == '\r') {
        src_ += '\n';
        if (i + 1 < source.size() && source[i + 1] == '\n') ++i;
      } else {
        src_ += source[i];
      }
    }
    if (!src_.empty() && src_.back() == '\n') src_.pop_back();
  }

  std::vector<Token> run() {
    tokens_.reserve(src_.size() / 6 + 16);  // typical density; avoids regrowing a large vector
    while (pos_ < src_.size()) root();
    emit(TokenType::kEof, "");
    return std::move(tokens_);
  }

 private:
  void emit(TokenType type, std::string text) {
    Token t;
    t.type = type;
    t.line = line_;
    t.text = std::move(text);
    tokens_.push_back(std::move(t));
  }

  // Moves pos_ to `to`, counting lines.
  void advance(size_t to) {
    line_ += int(std::count(src_.begin() + pos_, src_.begin() + to, '\n'));
    line_starting_ = to > pos_ && src_[to - 1] == '\n';
    pos_ = to;
  }

  size_t skip_space(size_t p) const {
    while (p < src_.size()) {
      size_t next = p;
      if (!text::is_space(text::decode(src_, next))) break;
      p = next;
    }
    return p;
  }

  bool at(size_t p, std::string_view s) const { return src_.compare(p, s.size(), s) == 0; }

  // Text before a tag, with `{%-` stripping or lstrip_blocks applied.
  void emit_data(size_t end, char sign, bool lstrip_allowed) {
    std::string_view data(src_.data() + pos_, end - pos_);
    if (sign == '-') {
      data = text::strip(data, std::nullopt, false, true);
    } else if (sign != '+' && lstrip_allowed) {
      size_t line_start = data.rfind('\n') + 1;  // 0 when there is no newline
      if (line_start > 0 || line_starting_) {
        std::string_view tail = data.substr(line_start);
        if (!tail.empty() && text::strip(tail, std::nullopt, true, false).empty()) data = data.substr(0, line_start);
      }
    }
    if (!data.empty()) emit(TokenType::kData, std::string(data));
    advance(end);
  }

  // `{% raw %}` at p (any sign); returns the end of the tag or npos.
  size_t match_raw_begin(size_t p) const {
    size_t q = p + 2;
    if (q < src_.size() && (src_[q] == '-' || src_[q] == '+')) ++q;
    q = skip_space(q);
    if (!at(q, "raw")) return std::string::npos;
    q = skip_space(q + 3);
    if (at(q, "-%}")) return skip_space(q + 3);
    if (at(q, "%}")) return q + 2;
    return std::string::npos;
  }

  void root() {
    size_t k = pos_;
    while (true) {
      k = src_.find('{', k);
      if (k == std::string::npos || k + 1 >= src_.size()) {
        emit_data(src_.size(), 0, false);
        return;
      }
      char c = src_[k + 1];
      if (c == '{' || c == '%' || c == '#') break;
      ++k;
    }
    const char kind = src_[k + 1];
    const char sign = k + 2 < src_.size() && (src_[k + 2] == '-' || src_[k + 2] == '+') ? src_[k + 2] : 0;
    const int tag_line = line_ + int(std::count(src_.begin() + pos_, src_.begin() + k, '\n'));
    if (kind == '%') {
      size_t raw_end = match_raw_begin(k);
      if (raw_end != std::string::npos) {
        emit_data(k, sign, true);
        advance(raw_end);
        raw_block(tag_line);
        return;
      }
    }
    emit_data(k, sign, kind != '{');
    advance(k + 2 + (sign ? 1 : 0));
    if (kind == '#') return comment(tag_line);
    emit(kind == '{' ? TokenType::kVariableBegin : TokenType::kBlockBegin, "");
    tag(kind == '%', tag_line);
  }

  void comment(int tag_line) {
    for (size_t i = pos_; i + 1 < src_.size(); ++i) {
      if ((src_[i] == '+' || src_[i] == '-') && at(i + 1, "#}")) {
        advance(src_[i] == '-' ? skip_space(i + 3) : i + 3);
        return;
      }
      if (at(i, "#}")) {
        advance(i + 2 < src_.size() && src_[i + 2] == '\n' ? i + 3 : i + 2);
        return;
      }
    }
    syntax_error(tag_line, "missing end of comment tag");
  }

  void raw_block(int tag_line) {
    for (size_t i = src_.find("{%", pos_); i != std::string::npos; i = src_.find("{%", i + 1)) {
      size_t q = i + 2;
      char sign = q < src_.size() && (src_[q] == '-' || src_[q] == '+') ? src_[q] : 0;
      if (sign) ++q;
      q = skip_space(q);
      if (!at(q, "endraw")) continue;
      q = skip_space(q + 6);
      size_t end;
      if (at(q, "+%}")) end = q + 3;
      else if (at(q, "-%}")) end = skip_space(q + 3);
      else if (at(q, "%}")) end = q + 2 < src_.size() && src_[q + 2] == '\n' ? q + 3 : q + 2;
      else continue;
      emit_data(i, sign, true);
      advance(end);
      return;
    }
    syntax_error(tag_line, "missing end of raw directive");
  }

  // The inside of {{ ... }} or {% ... %}, up to and including the end delimiter.
  void tag(bool block, int tag_line) {
    std::vector<char> balance;
    while (true) {
      if (pos_ >= src_.size())
        syntax_error(tag_line, block ? "unexpected end of template: unclosed '{%'" : "unexpected end of template: unclosed '{{'");
      if (balance.empty()) {
        const char* close = block ? "%}" : "}}";
        if (block && at(pos_, "+%}")) {
          advance(pos_ + 3);
          return emit_end(block);
        }
        if (src_[pos_] == '-' && at(pos_ + 1, close)) {
          advance(skip_space(pos_ + 3));
          return emit_end(block);
        }
        if (at(pos_, close)) {
          size_t end = pos_ + 2;
          if (block && end < src_.size() && src_[end] == '\n') ++end;  // trim_blocks
          advance(end);
          return emit_end(block);
        }
      }
      size_t ws = skip_space(pos_);
      if (ws > pos_) {
        advance(ws);
        continue;
      }
      if (number() || name() || string_literal()) continue;
      op(balance);
    }
  }

  void emit_end(bool block) {
    // The end token takes the line where the tag ended.
    emit(block ? TokenType::kBlockEnd : TokenType::kVariableEnd, "");
  }

  // (\d+_)*\d+ at p: end or npos.
  size_t digits(size_t p) const {
    if (p >= src_.size() || !is_dec(src_[p])) return std::string::npos;
    while (p < src_.size()) {
      if (is_dec(src_[p])) ++p;
      else if (src_[p] == '_' && p + 1 < src_.size() && is_dec(src_[p + 1])) p += 2;
      else break;
    }
    return p;
  }

  size_t exponent(size_t p) const {
    if (p >= src_.size() || (src_[p] | 32) != 'e') return std::string::npos;
    ++p;
    if (p < src_.size() && (src_[p] == '+' || src_[p] == '-')) ++p;
    return digits(p);
  }

  static std::string without_underscores(std::string_view s) {
    std::string out;
    for (char c : s)
      if (c != '_') out += c;
    return out;
  }

  bool number() {
    const size_t p = pos_;
    if (p >= src_.size() || !is_dec(src_[p])) return false;
    const size_t int_end = digits(p);
    // Float: digits (.digits)? e±digits  |  digits .digits   (not right after a '.')
    if (p == 0 || src_[p - 1] != '.') {
      size_t end = std::string::npos;
      size_t frac = src_[int_end] == '.' ? digits(int_end + 1) : std::string::npos;
      size_t after = frac != std::string::npos ? frac : int_end;
      if (size_t e = exponent(after); e != std::string::npos) end = e;
      else if (frac != std::string::npos) end = frac;
      if (end != std::string::npos) {
        std::string lit = without_underscores(std::string_view(src_).substr(p, end - p));
        emit(TokenType::kFloat, lit);
        tokens_.back().float_value = std::strtod(lit.c_str(), nullptr);
        advance(end);
        return true;
      }
    }
    int base = 10;
    size_t start = p, end = int_end;
    if (src_[p] == '0' && p + 1 < src_.size()) {
      char b = char(src_[p + 1] | 32);
      base = b == 'x' ? 16 : b == 'o' ? 8 : b == 'b' ? 2 : 10;
      if (base != 10) {
        size_t q = p + 2;
        auto valid = [&](char c) {
          c = char(c | 32);
          return base == 16 ? (is_dec(c) || (c >= 'a' && c <= 'f')) : base == 8 ? (c >= '0' && c <= '7') : (c == '0' || c == '1');
        };
        while (q < src_.size() && (valid(src_[q]) || (src_[q] == '_' && q + 1 < src_.size() && valid(src_[q + 1]))))
          q += src_[q] == '_' ? 2 : 1;
        if (q == p + 2) base = 10;
        else start = p + 2, end = q;
      }
      if (base == 10) {  // 0(_?0)*
        end = p + 1;
        while (end < src_.size() && (src_[end] == '0' || (src_[end] == '_' && end + 1 < src_.size() && src_[end + 1] == '0')))
          end += src_[end] == '_' ? 2 : 1;
      }
    }
    std::string lit = without_underscores(std::string_view(src_).substr(start, end - start));
    errno = 0;
    unsigned long long v = std::strtoull(lit.c_str(), nullptr, base);
    if (errno == ERANGE || v > uint64_t(INT64_MAX)) syntax_error(line_, "integer literal too large: " + lit);
    emit(TokenType::kInteger, lit);
    tokens_.back().int_value = int64_t(v);
    advance(end);
    return true;
  }

  bool name() {
    if (!is_name_start(static_cast<unsigned char>(src_[pos_]))) return false;
    size_t end = pos_ + 1;
    while (end < src_.size() && is_name_char(static_cast<unsigned char>(src_[end]))) ++end;
    emit(TokenType::kName, src_.substr(pos_, end - pos_));
    advance(end);
    return true;
  }

  static int hex_value(char c) {
    if (is_dec(c)) return c - '0';
    c = char(c | 32);
    return c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
  }

  // A quoted literal with Python's unicode-escape rules.
  bool string_literal() {
    const char quote = src_[pos_];
    if (quote != '\'' && quote != '"') return false;
    size_t i = pos_ + 1;
    std::string value;
    while (true) {
      if (i >= src_.size()) syntax_error(line_, "unterminated string literal");
      char c = src_[i];
      if (c == quote) break;
      if (c != '\\') {
        value += c;
        ++i;
        continue;
      }
      if (i + 1 >= src_.size()) syntax_error(line_, "unterminated string literal");
      char e = src_[i + 1];
      i += 2;
      switch (e) {
        case '\n': break;
        case '\\': value += '\\'; break;
        case '\'': value += '\''; break;
        case '"': value += '"'; break;
        case 'a': value += '\a'; break;
        case 'b': value += '\b'; break;
        case 'f': value += '\f'; break;
        case 'n': value += '\n'; break;
        case 'r': value += '\r'; break;
        case 't': value += '\t'; break;
        case 'v': value += '\v'; break;
        case 'x':
        case 'u':
        case 'U': {
          int n = e == 'x' ? 2 : e == 'u' ? 4 : 8;
          uint32_t cp = 0;
          for (int k = 0; k < n; ++k, ++i) {
            int h = i < src_.size() ? hex_value(src_[i]) : -1;
            if (h < 0) syntax_error(line_, std::string("truncated \\") + e + " escape in string literal");
            cp = cp * 16 + uint32_t(h);
          }
          if (cp > 0x10FFFF) syntax_error(line_, "illegal Unicode character in string literal");
          text::append_utf8(value, cp);
          break;
        }
        default:
          if (e >= '0' && e <= '7') {
            uint32_t cp = uint32_t(e - '0');
            for (int k = 0; k < 2 && i < src_.size() && src_[i] >= '0' && src_[i] <= '7'; ++k, ++i)
              cp = cp * 8 + uint32_t(src_[i] - '0');
            text::append_utf8(value, cp);
          } else if (e == 'N') {
            syntax_error(line_, "\\N{...} escapes are not supported");
          } else {
            value += '\\';
            value += e;
          }
      }
    }
    emit(TokenType::kString, std::move(value));
    advance(i + 1);
    return true;
  }

  void op(std::vector<char>& balance) {
    static constexpr std::string_view kTwo[] = {"**", "//", "==", "!=", ">=", "<="};
    for (auto t : kTwo) {
      if (at(pos_, t)) {
        emit(TokenType::kOperator, std::string(t));
        advance(pos_ + 2);
        return;
      }
    }
    const char c = src_[pos_];
    if (std::string_view("+-/*%~[](){}><=.:|,;").find(c) == std::string_view::npos) {
      std::string shown;
      size_t i = pos_;
      text::append_utf8(shown, text::decode(src_, i));
      syntax_error(line_, "unexpected char '" + shown + "'");
    }
    if (c == '(' || c == '[' || c == '{') {
      balance.push_back(c == '(' ? ')' : c == '[' ? ']' : '}');
    } else if (c == ')' || c == ']' || c == '}') {
      if (balance.empty()) syntax_error(line_, std::string("unexpected '") + c + "'");
      if (balance.back() != c) syntax_error(line_, std::string("unexpected '") + c + "', expected '" + balance.back() + "'");
      balance.pop_back();
    }
    emit(TokenType::kOperator, std::string(1, c));
    advance(pos_ + 1);
  }

  std::string src_;
  size_t pos_ = 0;
  int line_ = 1;
  bool line_starting_ = true;
  std::vector<Token> tokens_;
};

}  // namespace

std::vector<Token> tokenize(std::string_view source) { return Lexer(source).run(); }

std::string describe(const Token& t) {
  switch (t.type) {
    case TokenType::kData: return "template data";
    case TokenType::kVariableBegin: return "begin of print statement";
    case TokenType::kVariableEnd: return "end of print statement";
    case TokenType::kBlockBegin: return "begin of statement block";
    case TokenType::kBlockEnd: return "end of statement block";
    case TokenType::kEof: return "end of template";
    case TokenType::kString: return "string literal";
    default: return "'" + t.text + "'";
  }
}

}  // namespace zinc::chat
