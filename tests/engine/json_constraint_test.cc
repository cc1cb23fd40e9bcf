// JSON mode: JsonPrefix against nlohmann's strict parser on generated and mutated documents, its
// whitespace rules, and JsonConstraint masking a small vocabulary through a whole object.
#include "engine/json_constraint.h"

#include <gtest/gtest.h>

#include <cmath>
#include <nlohmann/json.hpp>
#include <random>
#include <regex>
#include <string>
#include <vector>

#include "recogniser_checks.h"

namespace zinc::engine {
namespace {

using nlohmann::json;

// Bytes of `text` JsonPrefix takes before it refuses one (text.size() when it takes them all).
size_t accepted(const std::string& text, bool* complete = nullptr) { return test::accepted(JsonPrefix(), text, complete); }

json random_value(std::mt19937& rng, int depth) {
  std::uniform_int_distribution<int> kind(0, depth > 3 ? 5 : 7);
  switch (kind(rng)) {
    case 0: return nullptr;
    case 1: return bool(rng() & 1);
    case 2: return int64_t(rng() % 2000) - 1000;
    case 3: return std::ldexp(double(int32_t(rng())), -int(rng() % 40));
    case 4: {
      std::string s;
      const std::string chars = "ab\"\\/\b\f\n\r\t\x01 z";
      for (int i = int(rng() % 8); i > 0; --i) s += chars[rng() % chars.size()];
      return s;
    }
    case 5: return std::string("x");
    case 6: {
      json a = json::array();
      for (int i = int(rng() % 4); i > 0; --i) a.push_back(random_value(rng, depth + 1));
      return a;
    }
    default: {
      json o = json::object();
      for (int i = int(rng() % 4); i > 0; --i) o["k" + std::to_string(rng() % 100)] = random_value(rng, depth + 1);
      return o;
    }
  }
}

// Whitespace outside strings as JsonPrefix allows it: none around the object, else one space,
// or a newline and up to 20 spaces or tabs.
bool whitespace_allowed(const std::string& text) {
  if (text.empty() || text.front() != '{' || text.back() != '}') return false;
  bool in_string = false, escaped = false;
  std::string run;
  auto run_ok = [&] {
    if (run.empty() || run == " ") return true;
    if (run[0] != '\n' || run.size() > 21) return false;
    return run.find_first_not_of(" \t", 1) == std::string::npos;
  };
  for (char c : text) {
    if (in_string) {
      if (escaped) escaped = false;
      else if (c == '\\') escaped = true;
      else if (c == '"') in_string = false;
      continue;
    }
    if (c == ' ' || c == '\n' || c == '\t' || c == '\r') {
      run += c;
      continue;
    }
    if (!run_ok()) return false;
    run.clear();
    if (c == '"') in_string = true;
  }
  return true;
}

json random_object(std::mt19937& rng) {
  json o = json::object();
  for (int i = int(rng() % 5); i > 0; --i) o["key" + std::to_string(i)] = random_value(rng, 1);
  return o;
}

TEST(JsonPrefix, TakesEveryObjectNlohmannWritesAndCompletesAtItsEnd) {
  std::mt19937 rng(7);
  for (int n = 0; n < 300; ++n) {
    const json o = random_object(rng);
    for (int indent : {-1, 2}) {
      const std::string text = o.dump(indent);
      bool complete = false;
      ASSERT_EQ(accepted(text, &complete), text.size()) << text;
      EXPECT_TRUE(complete) << text;
      bool early = true;
      EXPECT_EQ(accepted(text.substr(0, text.size() - 1), &early), text.size() - 1);
      EXPECT_FALSE(early) << text;
    }
  }
}

// Mutated documents (ASCII bytes, so UTF-8 is not in question): whatever JsonPrefix takes whole
// and calls complete must parse, and whatever parses as an object must be taken.
TEST(JsonPrefix, AgreesWithNlohmannOnMutatedDocuments) {
  std::mt19937 rng(11);
  const std::string alphabet = "{}[]\":,.-+eE0123456789tfnulrsa\\/ \nxbu";
  int parsed = 0, refused = 0;
  for (int n = 0; n < 4000; ++n) {
    std::string text = random_object(rng).dump();
    for (int m = int(rng() % 3) + 1; m > 0; --m) {
      const size_t at = rng() % (text.size() + 1);
      const char c = alphabet[rng() % alphabet.size()];
      switch (rng() % 3) {
        case 0: text.insert(text.begin() + at, c); break;
        case 1: if (at < text.size()) text.erase(at, 1); break;
        default: if (at < text.size()) text[at] = c; break;
      }
    }
    bool complete = false;
    const bool whole = accepted(text, &complete) == text.size();
    if (std::regex_search(text, std::regex("[eE][-+]?[0-9]{3,}"))) continue;  // nlohmann refuses numbers past a double
    const json j = json::parse(text, nullptr, false);
    const bool valid = !j.is_discarded() && j.is_object() && whitespace_allowed(text);
    if (whole && complete) {
      EXPECT_TRUE(!j.is_discarded() && j.is_object()) << text;
      ++parsed;
    }
    if (valid) {
      EXPECT_TRUE(whole && complete) << text;
    } else if (!whole) {
      ++refused;
    }
  }
  EXPECT_GT(parsed, 100);
  EXPECT_GT(refused, 1000);
}

TEST(JsonPrefix, RefusesWhatIsNotJson) {
  for (const std::string bad : {"[1]", " {}", "{'a': 1}", "{\"a\" 1}", "{\"a\":01}", "{\"a\":1,}", "{\"a\":tru}",
                                "{\"a\":-}", "{\"a\":1.}", "{\"a\":1e}", "{\"a\":\"\\x\"}", "{\"a\":\"\\u12g4\"}",
                                "{\"a\":[1,]}", "{\"a\":}", "{\"a\":1]", "{} {}", "{\"a\":\"\x01\"}", "{,}", "{\"a\":nul}"}) {
    bool complete = false;
    EXPECT_FALSE(accepted(bad, &complete) == bad.size() && complete) << bad;
  }
}

TEST(JsonPrefix, WhitespaceIsOneSpaceOrANewlineAndAnIndent) {
  EXPECT_EQ(accepted("{ \"a\": 1 }"), 10u);
  EXPECT_EQ(accepted("{\n  \"a\":\n\t1\n}"), 13u);
  EXPECT_EQ(accepted("{  \"a\": 1}"), 2u);   // two spaces
  EXPECT_EQ(accepted("{\n\n\"a\": 1}"), 2u);  // two newlines
  EXPECT_EQ(accepted("{\r\n}"), 1u);
  const std::string deep = "{\n" + std::string(20, ' ') + "}";
  EXPECT_EQ(accepted(deep), deep.size());
  EXPECT_EQ(accepted("{\n" + std::string(21, ' ') + "}"), 22u);
  std::string nested = "{\"a\":";
  for (int i = 0; i < JsonPrefix::kMaxDepth - 1; ++i) nested += "[";
  EXPECT_EQ(accepted(nested), nested.size());
  EXPECT_EQ(accepted(nested + "["), nested.size());
}

// On a vocabulary like a BPE one (every byte, then 30000 strings of 2-10 bytes from JSON's
// characters, letters and spaces, sharing prefixes, some repeated, some empty), in states along
// random documents, mask() allows exactly the tokens whose whole text the state takes (it walks the
// tokens in byte order, sharing prefixes).
TEST(JsonConstraint, MaskMatchesFeedingEveryToken) {
  std::mt19937 rng(3);
  std::vector<std::string> texts;
  for (int b = 0; b < 256; ++b) texts.push_back(std::string(1, char(b)));
  const std::string alphabet = "{}[]\":,.-+eE0123456789truefalsn \n\t\\/abuxyz";
  for (int n = 0; n < 30000; ++n) {
    std::string t = n % 3 == 0 && !texts.empty() ? texts[rng() % texts.size()].substr(0, 1 + rng() % 4) : "";
    for (int k = int(1 + rng() % 8); k > 0; --k) t += alphabet[rng() % alphabet.size()];
    texts.push_back(n % 997 == 0 ? "" : t);
  }
  auto vocab = std::make_shared<const TokenVocab>(texts);
  std::vector<int32_t> byte_token(256, -1);
  for (size_t id = 0; id < texts.size(); ++id)
    if (texts[id].size() == 1 && byte_token[uint8_t(texts[id][0])] < 0) byte_token[uint8_t(texts[id][0])] = int32_t(id);
  int states = 0;
  for (int n = 0; n < 6; ++n) {
    const std::string doc = random_object(rng).dump(n % 2 ? 1 : -1);
    JsonConstraint c(vocab, JsonPrefix(), {});
    JsonPrefix reference;
    size_t pos = 0;
    for (;;) {
      std::vector<float> logits(texts.size(), 0.0f);
      c.mask(logits);
      for (size_t id = 0; id < texts.size(); ++id) {
        JsonPrefix s = reference;
        const bool want = !texts[id].empty() && s.feed(texts[id]);
        ASSERT_EQ(!std::isinf(logits[id]), want) << "token " << id << " '" << texts[id] << "' after '" << doc.substr(0, pos) << "'";
      }
      ++states;
      if (pos == doc.size()) break;
      const size_t step = std::min(doc.size() - pos, size_t(1 + rng() % 7));
      for (size_t i = pos; i < pos + step; ++i) {
        ASSERT_GE(byte_token[uint8_t(doc[i])], 0);
        c.accept(byte_token[uint8_t(doc[i])]);
        ASSERT_TRUE(reference.feed(uint8_t(doc[i])));
      }
      pos += step;
    }
  }
  EXPECT_GT(states, 20);
}

TEST(JsonConstraint, MasksTokensThroughAWholeObject) {
  auto texts = std::make_shared<const TokenVocab>(
      std::vector<std::string>{"{", "}", "\"a\"", ":", "1", " ", "x", "", "{\"b\": 2}", "\"", "<think>"});
  const int32_t eog = 7;
  JsonConstraint c(texts, JsonPrefix(), {eog});
  auto allowed = [&] {
    std::vector<float> logits(texts->texts.size() + 2, 1.0f);  // two ids past the texts: never allowed
    c.mask(logits);
    std::vector<int32_t> ids;
    for (size_t i = 0; i < logits.size(); ++i)
      if (!std::isinf(logits[i])) ids.push_back(int32_t(i));
    return ids;
  };
  EXPECT_EQ(allowed(), (std::vector<int32_t>{0, 8}));
  c.accept(0);
  EXPECT_EQ(allowed(), (std::vector<int32_t>{1, 2, 5, 9}));
  c.accept(2);
  EXPECT_EQ(allowed(), (std::vector<int32_t>{3, 5}));
  c.accept(3);
  EXPECT_EQ(allowed(), (std::vector<int32_t>{0, 2, 4, 5, 8, 9}));
  c.accept(4);
  EXPECT_FALSE(c.finished());
  EXPECT_EQ(allowed(), (std::vector<int32_t>{1, 4, 5}));
  c.accept(1);
  EXPECT_TRUE(c.finished());
  // Nothing can follow a finished object but the end of generation.
  EXPECT_EQ(allowed(), (std::vector<int32_t>{eog}));
}

}  // namespace
}  // namespace zinc::engine
