// Regex (JSON Schema patterns) against std::regex's ECMAScript grammar with regex_search, on random
// patterns and strings; code points past ASCII; what it refuses.
#include "engine/regex.h"

#include <gtest/gtest.h>

#include <random>
#include <regex>
#include <string>
#include <vector>

namespace zinc::engine {
namespace {

bool matches(const Regex& r, const std::vector<uint32_t>& points) {
  uint16_t s = r.start();
  for (uint32_t p : points) {
    s = r.step(s, p);
    if (s == Regex::kDead) return false;
  }
  return r.accepts(s);
}
bool matches_ascii(const Regex& r, const std::string& ascii) { return matches(r, std::vector<uint32_t>(ascii.begin(), ascii.end())); }

std::string random_atom(std::mt19937& rng, int depth);

std::string random_branch(std::mt19937& rng, int depth) {
  std::string b;
  for (int n = int(rng() % 3); n >= 0; --n) {
    const std::string atom = random_atom(rng, depth);
    b += atom;
    if (atom[0] == '(') {  // groups repeat boundedly: std::regex backtracks exponentially on nested stars
      switch (rng() % 4) {
        case 0: b += "?"; break;
        case 1: b += "{0,2}"; break;
        case 2: b += "{2}"; break;
        default: break;
      }
      continue;
    }
    switch (rng() % 9) {
      case 0: b += "*"; break;
      case 1: b += "+"; break;
      case 2: b += "?"; break;
      case 3: b += "{" + std::to_string(rng() % 3) + "}"; break;
      case 4: b += "{" + std::to_string(rng() % 2) + "," + std::to_string(2 + rng() % 2) + "}"; break;
      case 5: b += "{1,}"; break;
      case 6: b += "??"; break;
      default: break;
    }
  }
  return b;
}

std::string random_atom(std::mt19937& rng, int depth) {
  static const std::vector<std::string> leaves = {"a", "b", "c", ".", "[ab]", "[^a]", "[a-c]", "\\d", "\\w", "\\s", "\\D",
                                                  "[b-c\\d]", "\\.", "1", " ", "[^]", "\\x61"};
  if (depth >= 2 || rng() % 3) return leaves[rng() % leaves.size()];
  std::string inner = random_branch(rng, depth + 1);
  for (int n = int(rng() % 2); n > 0; --n) inner += "|" + random_branch(rng, depth + 1);
  return (rng() % 2 ? "(" : "(?:") + inner + ")";
}

TEST(Regex, AgreesWithStdRegexSearch) {
  std::mt19937 rng(11);
  const std::string alphabet = "abcd1 .\n";
  int checked = 0, matched = 0, too_large = 0;
  for (int n = 0; n < 600; ++n) {
    std::string pattern;
    for (int b = int(rng() % 2); b >= 0; --b) {
      if (!pattern.empty()) pattern += "|";
      if (rng() % 2) pattern += "^";
      pattern += random_branch(rng, 0);
      if (rng() % 2) pattern += "$";
    }
    auto r = Regex::compile(pattern);
    if (!r.ok() && r.status().message().find("too large") != std::string::npos) {
      ++too_large;
      continue;
    }
    ASSERT_TRUE(r.ok()) << pattern << ": " << r.status().message();
    const std::regex reference(pattern, std::regex::ECMAScript);
    for (int k = 0; k < 40; ++k) {
      std::string s;
      for (int len = int(rng() % 7); len > 0; --len) s += alphabet[rng() % alphabet.size()];
      const bool want = std::regex_search(s, reference);
      ASSERT_EQ(matches_ascii(*r, s), want) << "/" << pattern << "/ on '" << s << "'";
      ++checked;
      matched += want;
    }
  }
  EXPECT_LT(too_large, 30);
  EXPECT_GT(matched, checked / 5);
  EXPECT_LT(matched, checked * 4 / 5);
}

TEST(Regex, ReadsCodePoints) {
  auto r = Regex::compile("^[à-ÿ]+\\u00e9?-日\\.$");
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_TRUE(matches(*r, {0xE0, 0xFF, '-', 0x65E5, '.'}));
  EXPECT_TRUE(matches(*r, {0xE9, 0xE9, '-', 0x65E5, '.'}));
  EXPECT_FALSE(matches(*r, {'a', '-', 0x65E5, '.'}));
  auto dot = Regex::compile("^.$");
  ASSERT_TRUE(dot.ok());
  EXPECT_TRUE(matches(*dot, {0x1F642}));
  EXPECT_FALSE(matches(*dot, {'\n'}));
  auto search = Regex::compile("ab");
  ASSERT_TRUE(search.ok());
  EXPECT_TRUE(matches_ascii(*search, "xxabyy"));
  EXPECT_FALSE(matches_ascii(*search, "xaxb"));
  // A state from which nothing can match is dead at once.
  auto never = Regex::compile("^a[]b|^c$");
  ASSERT_TRUE(never.ok());
  EXPECT_EQ(never->step(never->start(), 'a'), Regex::kDead);
}

TEST(Regex, RefusesWhatItCannotHold) {
  for (const char* bad : {"(?=a)b", "(?!a)", "(?<=a)b", "(a)\\1", "\\bword", "\\p{L}", "a^b", "a$b", "(a", "a)", "[a", "*a",
                          "a{3,1}", "a**", "[z-a]", "^[]$", "a{2000}", "(((a{0,1000}){0,1000}){0,1000})"}) {
    auto r = Regex::compile(bad);
    EXPECT_FALSE(r.ok()) << bad;
    if (!r.ok()) {
      EXPECT_EQ(r.status().message().rfind("pattern: ", 0), 0u) << r.status().message();
    }
  }
  EXPECT_TRUE(Regex::compile("a{").ok());  // a literal brace
  EXPECT_TRUE(Regex::compile("(?<year>\\d{4})").ok());
}

}  // namespace
}  // namespace zinc::engine
