#include "tokenizer/pre_tokenizer.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <utility>

#include "core/check.h"
#include "tokenizer/unicode.h"

namespace zinc::tokenizer {
namespace {

// The regexes, as in the tokenizers' tokenizer.json (model-spec §4.5). `(?i:'s|...)` is written
// with explicit case classes as llama.cpp does, so that only ASCII letters fold.
const char* const kContractions = R"((?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD]))";
const std::string kGpt2 = R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S))";
const std::string kLlama3 = std::string(kContractions) +
    R"(|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
const std::string kQwen2 = std::string(kContractions) +
    R"(|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
const std::string kQwen35 = std::string(kContractions) +
    R"(|[^\r\n\p{L}\p{N}]?[\p{L}\p{M}]+|\p{N}| ?[^\s\p{L}\p{M}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
const std::string kUpperWord = R"([\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}])";
const std::string kLowerWord = R"([\p{Ll}\p{Lm}\p{Lo}\p{M}])";
const std::string kGpt4o = R"([^\r\n\p{L}\p{N}]?)" + kUpperWord + "*" + kLowerWord + "+" + kContractions + "?" +
    R"(|[^\r\n\p{L}\p{N}]?)" + kUpperWord + "+" + kLowerWord + "*" + kContractions + "?" +
    R"(|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
const std::string kTekken = R"([^\r\n\p{L}\p{N}]?)" + kUpperWord + "*" + kLowerWord + "+" +
    R"(|[^\r\n\p{L}\p{N}]?)" + kUpperWord + "+" + kLowerWord + "*" +
    R"(|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
const std::string kCjk = "[\u4e00-\u9fa5\u0800-\u4e00\uac00-\ud7ff]+";

struct NamedSpec {
  std::vector<std::string_view> names;
  PreTokenizerSpec spec;
};

const std::vector<NamedSpec>& specs() {
  static const std::vector<NamedSpec> table = {
      {{"default"},
       {{R"([\p{P}\$\+<=>\^~\|]+)", kGpt2, R"(\p{N}+)", "[0-9][0-9][0-9]"}}},
      {{"gpt-2", "phi-2", "jina-es", "jina-de", "gigachat", "jina-v2-es", "jina-v2-de", "a.x-4.0", "mellum",
        "modern-bert", "exaone4", "mpt", "olmo", "jais", "jina-v1-en", "jina-v2-code", "roberta-bpe"},
       {{kGpt2}}},
      {{"trillion", "granite-docling"}, {{kGpt2}, false, false}},
      {{"llama3", "llama-v3", "llama-bpe", "falcon3", "falcon-h1", "pixtral", "midm-2.0", "lfm2", "jina-v5-nano"},
       {{kLlama3}, true, true, true}},
      {{"dbrx", "smaug-bpe", "glm4", "chatglm-bpe"}, {{kLlama3}}},
      {{"qwen2", "deepseek-r1-qwen", "kormo", "f2llmv2", "hunyuan", "solar-open"}, {{kQwen2}, false, false}},
      {{"megrez", "stablelm2"}, {{kQwen2}}},
      {{"qwen35"}, {{kQwen35}, false, false}},
      {{"deepseek-coder"},
       {{"[\r\n]", R"(\s?\p{L}+)", R"(\s?\p{P}+)", kCjk, R"(\p{N})"}, false, false}},
      {{"deepseek-llm"},
       {{"[\r\n]",
         "\\s?[A-Za-z\u00b5\u00c0-\u00d6\u00d8-\u00f6\u00f8-\u01ba\u01bc-\u01bf\u01c4-\u0293\u0295-\u02af"
         "\u0370-\u0373\u0376\u0377\u037b-\u037d\u037f\u0386\u0388-\u038a\u038c\u038e-\u03a1\u03a3-\u03f5"
         "\u03f7-\u0481\u048a-\u052f\u0531-\u0556\u10a0-\u10c5\u13a0-\u13f5\u13f8-\u13fd\u1c90-\u1cba"
         "\u1cbd-\u1cbf\u1d00-\u1d2b\u1d6b-\u1d77\u1d79-\u1d9a\u1e00-\u1f15\u1f18-\u1f1d\u1f20-\u1f45"
         "\u1f48-\u1f4d\u1f50-\u1f57\u1f59\u1f5b\u1f5d\u1f5f-\u1f7d\u1f80-\u1fb4\u1fb6-\u1fbc\u1fbe"
         "\u1fc2-\u1fc4\u1fc6-\u1fcc\u1fd0-\u1fd3\u1fd6-\u1fdb\u1fe0-\u1fec\u1ff2-\u1ff4\u1ff6-\u1ffc"
         "\u2102\u2107\u210a-\u2113\u2115\u2119-\u211d\u2124\u2126\u2128\u212a-\u212d\u212f-\u2134\u2139"
         "\u213c-\u213f\u2145-\u2149\u214e\u2183\u2184\u2c00-\u2c7b\u2c7e-\u2ce4\u2ceb-\u2cee\u2cf2\u2cf3"
         "\ua640-\ua66d\ua680-\ua69b\ua722-\ua76f\ua771-\ua787\ua78b-\ua78e\uab70-\uabbf\ufb00-\ufb06"
         "\ufb13-\ufb17\uff21-\uff3a\uff41-\uff5a\U00010400-\U0001044f\U000104b0-\U000104d3"
         "\U000104d8-\U000104fb\U00010c80-\U00010cb2\U00010cc0-\U00010cf2\U000118a0-\U000118df"
         "\U0001e900-\U0001e943]+",
         "\\s?[!-/:-~\uff01-\uff0f\uff1a-\uff5e\u2018-\u201f\u3000-\u3002]+", R"(\s+$)", kCjk, R"(\p{N}+)"},
        false, false}},
      {{"deepseek-v3"},
       {{R"(\p{N}{1,3})", "[\u4e00-\u9fa5\u3040-\u309f\u30a0-\u30ff]+",
         R"([!"#$%&'()*+,\-./:;<=>?@\[\\\]^_`{|}~][A-Za-z]+|[^\r\n\p{L}\p{P}\p{S}]?[\p{L}\p{M}]+| ?[\p{P}\p{S}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)"},
        false, false}},
      {{"falcon"}, {{R"([\p{P}\$\+<=>\^~\|`]+)", kGpt2, "[0-9][0-9][0-9]"}}},
      {{"starcoder", "refact", "codeshell", "exaone", "minerva-7b"}, {{R"(\p{N})", kGpt2}}},
      {{"command-r", "smollm"}, {{R"(\p{N})", kGpt2}, false, false}},
      {{"gpt-4o", "llama4", "kanana2"}, {{kGpt4o}, false, false}},
      {{"tekken"}, {{kTekken}, true, false, true}},
  };
  return table;
}

// Unicode White_Space, which is what \s means in the tokenizers' regex engines.
constexpr std::string_view kWhiteSpace =
    R"(\t\n\x{0B}\f\r \x{85}\x{A0}\x{1680}\x{2000}-\x{200A}\x{2028}\x{2029}\x{202F}\x{205F}\x{3000})";

// Rewrites \s and \S as explicit White_Space classes.
std::string expand_whitespace(std::string_view re) {
  std::string out;
  bool in_class = false;
  for (size_t i = 0; i < re.size(); ++i) {
    char c = re[i];
    if (c == '\\' && i + 1 < re.size()) {
      char d = re[++i];
      if (d == 's') {
        out += in_class ? std::string(kWhiteSpace) : "[" + std::string(kWhiteSpace) + "]";
      } else if (d == 'S' && !in_class) {
        out += "[^" + std::string(kWhiteSpace) + "]";
      } else {
        out += c;
        out += d;
      }
      continue;
    }
    if (c == '[' && !in_class) {
      in_class = true;
      out += c;
      if (i + 1 < re.size() && re[i + 1] == '^') out += re[++i];
      if (i + 1 < re.size() && re[i + 1] == ']') out += re[++i];  // a literal ']' first in a class
      continue;
    }
    if (c == ']' && in_class) in_class = false;
    out += c;
  }
  return out;
}

}  // namespace

const PreTokenizerSpec* find_pre_tokenizer(std::string_view pre) {
  if (pre.empty()) pre = "default";
  for (const auto& s : specs())
    for (auto name : s.names)
      if (name == pre) return &s.spec;
  return nullptr;
}

std::vector<std::string> known_pre_tokenizers() {
  std::vector<std::string> names;
  for (const auto& s : specs())
    for (auto name : s.names) names.emplace_back(name);
  return names;
}

struct PreTokenizer::Regex {
  pcre2_code* code = nullptr;
  ~Regex() { pcre2_code_free(code); }
};

PreTokenizer::PreTokenizer() = default;
PreTokenizer::PreTokenizer(PreTokenizer&&) noexcept = default;
PreTokenizer& PreTokenizer::operator=(PreTokenizer&&) noexcept = default;
PreTokenizer::~PreTokenizer() = default;

Result<PreTokenizer> PreTokenizer::compile(const std::vector<std::string>& regexes) {
  PreTokenizer p;
  for (const auto& source : regexes) {
    std::string pattern = expand_whitespace(source);
    int error = 0;
    PCRE2_SIZE error_offset = 0;
    auto r = std::make_unique<Regex>();
    r->code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(),
                            PCRE2_UTF | PCRE2_UCP | PCRE2_MATCH_INVALID_UTF | PCRE2_DOLLAR_ENDONLY, &error,
                            &error_offset, nullptr);
    if (!r->code) {
      PCRE2_UCHAR message[256];
      pcre2_get_error_message(error, message, sizeof message);
      return zinc::error("pre-tokenizer regex '%s': %s at offset %zu", source.c_str(),
                         reinterpret_cast<const char*>(message), size_t(error_offset));
    }
    pcre2_jit_compile(r->code, PCRE2_JIT_COMPLETE);  // falls back to the interpreter when JIT is unavailable
    p.regexes_.push_back(std::move(r));
  }
  return p;
}

namespace {

struct MatchData {
  explicit MatchData(const pcre2_code* code) : data(pcre2_match_data_create_from_pattern(code, nullptr)) {
    ZINC_CHECK(data != nullptr);
  }
  ~MatchData() { pcre2_match_data_free(data); }
  pcre2_match_data* data;
};

// Splits `text` by one regex into matches and the stretches between them.
void split_one(const pcre2_code* code, pcre2_match_data* md, std::string_view text,
               std::vector<std::string_view>* out) {
  const auto* subject = reinterpret_cast<PCRE2_SPTR>(text.data());
  const size_t n = text.size();
  size_t pos = 0, last = 0;
  while (pos < n) {
    int rc = pcre2_match(code, subject, n, pos, 0, md, nullptr);
    if (rc < 0 && rc != PCRE2_ERROR_NOMATCH) rc = pcre2_match(code, subject, n, pos, PCRE2_NO_JIT, md, nullptr);
    if (rc < 0) break;  // no match (or a resource limit): the rest is one unmatched stretch
    const PCRE2_SIZE* ov = pcre2_get_ovector_pointer(md);
    size_t start = ov[0], end = ov[1];
    if (end <= start) {  // empty match: nothing to cut here
      pos = start + utf8_sequence_bytes(uint8_t(text[start < n ? start : n - 1]));
      continue;
    }
    if (start > last) out->push_back(text.substr(last, start - last));
    out->push_back(text.substr(start, end - start));
    last = pos = end;
  }
  if (last < n) out->push_back(text.substr(last));
}

}  // namespace

void PreTokenizer::split(std::string_view text, std::vector<std::string_view>* pieces) const {
  if (text.empty()) return;
  if (regexes_.empty()) {
    pieces->push_back(text);
    return;
  }
  if (regexes_.size() == 1) {
    MatchData md(regexes_[0]->code);
    split_one(regexes_[0]->code, md.data, text, pieces);
    return;
  }
  std::vector<std::string_view> current{text}, next;
  for (const auto& r : regexes_) {
    MatchData md(r->code);
    next.clear();
    for (auto piece : current) split_one(r->code, md.data, piece, &next);
    current.swap(next);
  }
  pieces->insert(pieces->end(), current.begin(), current.end());
}

}  // namespace zinc::tokenizer
