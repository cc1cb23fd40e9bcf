// GBNF grammars: what the parser refuses and why; random regular grammars against std::regex
// (whole strings, and every prefix of a string the grammar takes); recursion, code points past
// ASCII, bytes of a character split over tokens; the constraint's mask, where it lets the
// request end, and rebuilding the automaton's tables mid-generation.
#include <gtest/gtest.h>

#include <random>
#include <regex>
#include <string>
#include <vector>

#include "engine/gbnf.h"
#include "engine/grammar_constraint.h"
#include "recogniser_checks.h"

namespace zinc::engine {
namespace {

std::shared_ptr<const Grammar> compile(const std::string& source) {
  auto g = Grammar::compile(source);
  EXPECT_TRUE(g.ok()) << source << "\n" << g.status().message();
  return g.ok() ? *g : nullptr;
}

struct Matcher {
  explicit Matcher(const std::string& source) : grammar(compile(source)), automaton(grammar) {}
  GrammarState start() { return {&automaton, automaton.start()}; }
  // 0: refused somewhere, 1: a prefix of something the grammar takes, 2: taken whole.
  int take(const std::string& text) {
    GrammarState s = start();
    if (test::accepted(s, text) != text.size()) return 0;
    for (char c : text) s.feed(uint8_t(c));
    return s.can_end() ? 2 : 1;
  }
  std::shared_ptr<const Grammar> grammar;
  GrammarAutomaton automaton;
};

TEST(Gbnf, RefusesMalformedGrammarsWithTheReason) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"", "no 'root' rule"},
      {"start ::= \"a\"\n", "no 'root' rule"},
      {"root ::= item\n", "rule 'item' is used but not defined"},
      {"root ::= \"a\"\nroot ::= \"b\"\n", "line 2: rule 'root' is defined twice"},
      {"root ::= root \"a\" | \"b\"\n", "rule 'root' is left-recursive"},
      {"root ::= a\na ::= b \"x\"\nb ::= c? a\nc ::= \"c\"\n", "left-recursive"},
      {"root ::= (\"a\"?)* \"b\"\n", ""},  // a nullable star: fine, it cannot loop
      {"root ::= \"a\" \"\"*\n", "a quantifier needs something before it"},
      {"root ::= \"a\" \"\\q\"\n", "unknown escape \\q"},
      {"root ::= \"abc\n", ""},
      {"root ::= [abc\n", "unterminated character class"},
      {"root ::= \"a\"{3,2}\n", "m <= n"},
      {"root ::= \"a\"{2001}\n", "over 2000"},
      {"root ::= [z-a]\n", "runs backwards"},
      {"root ::= \"\xC3\"\n", "not valid UTF-8"},
      {"root ::= \"\\xZZ\"\n", "hex digits"},
      {"root ::= \"a\" )\n", "expected the end of the line"},
      {"root := \"a\"\n", "expected '::='"},
      {"root ::= * \"a\"\n", "expected the end of the line"},
      {"root ::= (\"a\" | \"b\"\n", "expected ')'"},
      {"::= \"a\"\n", "expected a rule name"},
      {"root ::= [^\\x00-\\U0010FFFF]\n", "matches nothing"},
  };
  for (const auto& [source, why] : cases) {
    auto g = Grammar::compile(source);
    if (why.empty() && source.find("(\"a\"?)*") != std::string::npos) {
      EXPECT_TRUE(g.ok()) << source << ": " << g.status().message();
      continue;
    }
    ASSERT_FALSE(g.ok()) << source;
    EXPECT_NE(g.status().message().find(why), std::string::npos) << source << " -> " << g.status().message();
    EXPECT_EQ(g.status().message().find('\n'), std::string::npos) << g.status().message();
  }
  std::string deep = "root ::= ";
  for (int i = 0; i < 200; ++i) deep += "(";
  EXPECT_NE(Grammar::compile(deep).status().message().find("nest too deep"), std::string::npos);
}

TEST(Gbnf, MatchesLiteralsClassesQuantifiersAndRules) {
  Matcher m(R"(
# a comment line
root ::= greeting ", " name "!"? # after a rule
greeting ::= "hi" | "hello"
name ::= [A-Z] [a-z]{1,5} ("-" [A-Z] [a-z]*)*
)");
  EXPECT_EQ(m.take("hi, Ann"), 2);
  EXPECT_EQ(m.take("hello, Mary-Jane!"), 2);
  EXPECT_EQ(m.take("hello, Mary-"), 1);
  EXPECT_EQ(m.take("hel"), 1);
  EXPECT_EQ(m.take("hey"), 0);
  EXPECT_EQ(m.take("hi, ann"), 0);
  EXPECT_EQ(m.take("hi, Abcdefg"), 0);  // {1,5}
  EXPECT_EQ(m.take("hi, Ann!!"), 0);

  Matcher multi(R"(root ::= (
    "a" |
    "b"   # spread over lines inside parentheses
  )+ [^ab\n]
)");
  EXPECT_EQ(multi.take("abbaz"), 2);
  EXPECT_EQ(multi.take("z"), 0);
  EXPECT_EQ(multi.take("ab\n"), 0);
}

TEST(Gbnf, RecursionAndCodePointsPastAscii) {
  Matcher parens("root ::= \"(\" root \")\" root | \"\"\n");
  std::mt19937 rng(5);
  for (int i = 0; i < 300; ++i) {
    std::string s;
    int depth = 0;
    bool ok = true;
    for (int n = int(rng() % 12); n > 0; --n) {
      const char c = rng() % 2 ? '(' : ')';
      s += c;
      depth += c == '(' ? 1 : -1;
      ok = ok && depth >= 0;
    }
    EXPECT_EQ(parens.take(s), !ok ? 0 : depth == 0 ? 2 : 1) << s;
  }

  Matcher cyrillic("root ::= [а-я]+ \" \" [^а-я]  \"→\" .\n");
  EXPECT_EQ(cyrillic.take("привет x→€"), 2);
  EXPECT_EQ(cyrillic.take("привет я"), 0);
  EXPECT_EQ(cyrillic.take("hello"), 0);
  EXPECT_EQ(cyrillic.take("при\xD0"), 1);       // half of 'в'
  EXPECT_EQ(cyrillic.take("при\xC3"), 0);       // U+00C0..U+00FF: not in [а-я]
  EXPECT_EQ(cyrillic.take("при\xED\xA0\x80"), 0);  // a surrogate
  EXPECT_EQ(cyrillic.take("при\xC0\xB0"), 0);   // overlong
  EXPECT_EQ(cyrillic.take("я 1→\xF0\x9F\x98\x80"), 2);  // '.' takes a character past the BMP

  Matcher escapes(R"(root ::= "\x41\u00e9\U0001F600\t\"\\" [\[\]\-]
)");
  EXPECT_EQ(escapes.take("Aé😀\t\"\\-"), 2);
  EXPECT_EQ(escapes.take("Aé😀\t\"\\]"), 2);
  EXPECT_EQ(escapes.take("Aé😀\t\"\\a"), 0);
}

// A random regular expression over {a, b, c}, as GBNF (items and rules) and as an ECMAScript
// regex; some groups become rules of their own.
struct RandomGrammar {
  std::mt19937 rng;
  std::string rules;
  int n_rules = 0;

  std::pair<std::string, std::string> atom(int depth) {
    static const std::vector<std::pair<std::string, std::string>> leaves = {
        {"\"a\"", "a"}, {"\"b\"", "b"}, {"\"ab\"", "ab"}, {"[ab]", "[ab]"}, {"[^a]", "[^a]"},
        {"[a-c]", "[a-c]"}, {".", "[\\s\\S]"}, {"\"\"", ""}, {"\"\\x63\"", "c"}};
    if (depth >= 2 || rng() % 3) return leaves[rng() % leaves.size()];
    auto [g, r] = alternatives(depth + 1);
    if (rng() % 2) {  // a rule of its own
      const std::string name = "r" + std::to_string(n_rules++);
      rules += name + " ::= " + g + "\n";
      return {name, "(?:" + r + ")"};
    }
    return {"(" + g + ")", "(?:" + r + ")"};
  }
  std::pair<std::string, std::string> sequence(int depth) {
    std::string g, r;
    for (int n = int(rng() % 3) + 1; n > 0; --n) {
      auto [ga, ra] = atom(depth);
      if (ra.empty()) {  // "" takes no quantifier
        g += (g.empty() ? "" : " ") + ga;
        continue;
      }
      const bool group = ra.front() == '(';
      if (ra == "ab") ra = "(?:ab)";
      // Groups repeat boundedly: std::regex backtracks exponentially on nested stars.
      switch (rng() % 8) {
        case 0: ga += group ? "?" : "*", ra += group ? "?" : "*"; break;
        case 1: ga += group ? "{2}" : "+", ra += group ? "{2}" : "+"; break;
        case 2: ga += "?", ra += "?"; break;
        case 3: {
          const std::string m = std::to_string(rng() % 3);
          ga += "{" + m + "}", ra += "{" + m + "}";
          break;
        }
        case 4: {
          const std::string m = std::to_string(rng() % 2), n2 = std::to_string(2 + rng() % 2);
          ga += "{" + m + "," + n2 + "}", ra += "{" + m + "," + n2 + "}";
          break;
        }
        case 5: ga += group ? "{0,2}" : "{1,}", ra += group ? "{0,2}" : "{1,}"; break;
        default: break;
      }
      g += (g.empty() ? "" : " ") + ga;
      r += ra;
    }
    return {g, r};
  }
  std::pair<std::string, std::string> alternatives(int depth) {
    auto [g, r] = sequence(depth);
    for (int n = int(rng() % 2); n > 0; --n) {
      auto [g2, r2] = sequence(depth);
      g += " | " + g2;
      r += "|" + r2;
    }
    return {g, r};
  }
};

TEST(Gbnf, RandomRegularGrammarsAgreeWithStdRegex) {
  std::mt19937 rng(11);
  int taken = 0;
  for (int trial = 0; trial < 300; ++trial) {
    RandomGrammar rg;
    rg.rng.seed(uint32_t(trial));
    auto [g, r] = rg.alternatives(0);
    const std::string source = "root ::= " + g + "\n" + rg.rules;
    auto compiled = Grammar::compile(source);
    if (!compiled.ok()) {  // as in llama.cpp, a quantifier after nothing (an empty group) is refused
      EXPECT_NE(compiled.status().message().find("a quantifier needs something before it"), std::string::npos)
          << source << compiled.status().message();
      continue;
    }
    GrammarAutomaton automaton(*compiled);
    const std::regex re("^(?:" + r + ")$");
    for (int k = 0; k < 40; ++k) {
      std::string s;
      for (int n = int(rng() % 7); n > 0; --n) s += "abcd"[rng() % 4];
      GrammarState st{&automaton, automaton.start()};
      size_t fed = 0;
      while (fed < s.size() && st.feed(uint8_t(s[fed]))) ++fed;
      const bool whole = fed == s.size() && st.can_end();
      ASSERT_EQ(whole, std::regex_match(s, re)) << source << "regex " << r << "\nstring '" << s << "'";
      taken += whole;
      // A prefix the automaton keeps alive leads somewhere: the shortest way it finds to an end
      // makes a string the regex takes.
      if (fed == s.size() && !whole) {
        std::vector<std::pair<GrammarState, std::string>> level{{st, ""}};
        std::string found;
        for (int depth = 0; depth < 12 && found.empty() && !level.empty(); ++depth) {
          std::vector<std::pair<GrammarState, std::string>> next;
          for (const auto& [state, tail] : level)
            for (char c : std::string("abcd")) {
              GrammarState t = state;
              if (!t.feed(uint8_t(c))) continue;
              if (t.can_end() && found.empty()) found = tail + c;
              if (next.size() < 4096) next.push_back({t, tail + c});
            }
          level = std::move(next);
        }
        ASSERT_FALSE(found.empty()) << source << "'" << s << "' is alive but leads nowhere";
        EXPECT_TRUE(std::regex_match(s + found, re)) << source << "'" << s + found << "'";
      }
    }
  }
  EXPECT_GT(taken, 500);
}

// A toy vocabulary: single bytes, a few words, a character split over two tokens, a control token.
std::vector<std::string> toy_texts() {
  std::vector<std::string> t;
  for (int b = 0; b < 128; ++b) t.push_back(std::string(1, char(b)));
  t.push_back("yes");        // 128
  t.push_back("no");         // 129
  t.push_back("\xD0");       // 130: the first byte of п
  t.push_back("\xBF");       // 131: its second
  t.push_back("");           // 132: a control token (the end of generation)
  t.push_back("п");          // 133
  t.push_back("ye");         // 134
  return t;
}

TEST(GrammarConstraint, MasksTokensAndEndsWhereTheGrammarCan) {
  auto vocab = std::make_shared<const TokenVocab>(toy_texts());
  auto g = compile("root ::= (\"yes\" | \"no\" | \"п\") \"!\"*\n");
  auto c = GrammarConstraint::make(vocab, g, {132});
  auto allowed = [&] {
    std::vector<float> logits(vocab->texts.size(), 0.0f);
    c->mask(logits);
    std::vector<int> ids;
    for (size_t i = 0; i < logits.size(); ++i)
      if (!std::isinf(logits[i])) ids.push_back(int(i));
    return ids;
  };
  EXPECT_EQ(allowed(), (std::vector<int>{'n', 'y', 128, 129, 130, 133, 134}));
  c->accept(130);  // half of п
  EXPECT_EQ(allowed(), (std::vector<int>{131}));
  c->accept(131);
  EXPECT_EQ(allowed(), (std::vector<int>{'!', 132}));  // more, or the end
  EXPECT_FALSE(c->finished());
  c->accept('!');
  EXPECT_EQ(allowed(), (std::vector<int>{'!', 132}));

  auto fixed = GrammarConstraint::make(vocab, compile("root ::= \"no\"\n"), {132});
  fixed->accept(129);
  EXPECT_TRUE(fixed->finished());  // nothing can follow: the request ends
}

TEST(GrammarConstraint, MaskAgreesWithFeedingOnAJsonGrammar) {
  const std::string json = R"(root   ::= object
value  ::= object | array | string | number | ("true" | "false" | "null") ws
object ::=
  "{" ws (
            string ":" ws value
    ("," ws string ":" ws value)*
  )? "}" ws
array  ::=
  "[" ws (
            value
    ("," ws value)*
  )? "]" ws
string ::=
  "\"" (
    [^"\\\x7F\x00-\x1F] |
    "\\" (["\\/bfnrt] | "u" [0-9a-fA-F]{4}) # escapes
  )* "\"" ws
number ::= ("-"? ([0-9] | [1-9] [0-9]{0,15})) ("." [0-9]+)? ([eE] [-+]? [0-9] [1-9]{0,15})? ws
ws ::= | " " | "\n" [ \t]{0,20}
)";
  auto g = compile(json);
  ASSERT_TRUE(g);
  std::vector<std::string> texts;  // every byte, then words
  for (int b = 0; b < 256; ++b) texts.push_back(std::string(1, char(b)));
  for (const char* w : {"\": ", "true", "tr", "{\"", "\"}", "\\u00", ", ", "1.5", "e+", "\xD0\xBF"}) texts.push_back(w);
  auto vocab = std::make_shared<const TokenVocab>(texts);
  const std::string doc = "{\"a\": [1, -2.5e3, \"x\\u00e9п\"], \"b\": {\"c\": true}}";
  auto c = GrammarConstraint::make(vocab, g, {});
  GrammarAutomaton reference_automaton(g);
  // The object may still be followed by spacing, so the request does not end by itself.
  test::expect_mask_matches_feeding(*c, GrammarState{&reference_automaton, reference_automaton.start()}, texts, doc,
                                    /*finished=*/false);
}

// llama.cpp's token references: `<[id]>` and `<text>` take one token by its id, `!` any other.
Grammar::Tokens toy_tokens() {
  Grammar::Tokens t;
  t.n_tokens = int32_t(toy_texts().size()) + 1;  // and 135, a control token with the text <ctl>
  t.of_text = [](std::string_view text) -> std::optional<int32_t> {
    if (text == "<ctl>") return 135;
    if (text == "<yes>") return std::nullopt;  // two tokens
    return std::nullopt;
  };
  return t;
}

TEST(Gbnf, ParsesTokenReferences) {
  const Grammar::Tokens tokens = toy_tokens();
  for (const char* ok : {"root ::= <[128]> \"!\"\n", "root ::= !<[128]>* <[0]>\n", "root ::= <ctl> | !<ctl>{2}\n"}) {
    auto g = Grammar::compile(ok, &tokens);
    EXPECT_TRUE(g.ok()) << ok << ": " << g.status().message();
    if (g.ok()) {
      EXPECT_TRUE((*g)->has_tokens);
    }
  }
  auto literal = Grammar::compile("root ::= \"<[1]>\"\n", &tokens);
  ASSERT_TRUE(literal.ok());
  EXPECT_FALSE((*literal)->has_tokens);  // a literal is characters
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"root ::= <[136]>\n", "not in the vocabulary (136 tokens)"},
      {"root ::= <[x]>\n", "written <[digits]>"},
      {"root ::= <[12]\n", "written <[digits]>"},
      {"root ::= <[99999999]>\n", "over 16777215"},
      {"root ::= <yes>\n", "<yes> is not one token"},
      {"root ::= <ctl\n", "unterminated token"},
      {"root ::= !\"a\"\n", "expected the end of the line"},
  };
  for (const auto& [source, why] : cases) {
    auto g = Grammar::compile(source, &tokens);
    ASSERT_FALSE(g.ok()) << source;
    EXPECT_NE(g.status().message().find(why), std::string::npos) << source << " -> " << g.status().message();
  }
  auto no_vocab = Grammar::compile("root ::= <ctl>\n");
  ASSERT_FALSE(no_vocab.ok());
  EXPECT_NE(no_vocab.status().message().find("needs a model's vocabulary"), std::string::npos);
}

TEST(GrammarConstraint, TokenReferencesTakeTokensByTheirIds) {
  std::vector<std::string> texts = toy_texts();
  texts.push_back("");  // 135: a control token, <ctl>
  auto vocab = std::make_shared<const TokenVocab>(texts);
  const Grammar::Tokens tokens = toy_tokens();
  auto make = [&](const std::string& source) {
    auto g = Grammar::compile(source, &tokens);
    EXPECT_TRUE(g.ok()) << source << ": " << g.status().message();
    return GrammarConstraint::make(vocab, *g, {132});
  };
  auto allowed = [&](const GrammarConstraint& c) {
    std::vector<float> logits(texts.size(), 0.0f);
    c.mask(logits);
    std::vector<int> ids;
    for (size_t i = 0; i < logits.size(); ++i)
      if (!std::isinf(logits[i])) ids.push_back(int(i));
    return ids;
  };

  // A control token (no text) where the grammar names it, and the request ends after it.
  auto c = make("root ::= \"no\" <ctl>\n");
  c->accept(129);
  EXPECT_EQ(allowed(*c), (std::vector<int>{135}));
  c->accept(135);
  EXPECT_TRUE(c->finished());

  // By id the token is taken whatever its text; by text the same letters still read as characters.
  c = make("root ::= <[128]> \"!\" | \"yes\" \"?\"\n");
  EXPECT_EQ(allowed(*c), (std::vector<int>{'y', 128, 134}));
  c->accept(128);  // "yes" by id and by text: both continuations stay
  EXPECT_EQ(allowed(*c), (std::vector<int>{'!', '?'}));
  c = make("root ::= <[128]> \"!\" | \"yes\" \"?\"\n");
  c->accept(134);  // "ye" + "s": only the text's reading
  c->accept('s');
  EXPECT_EQ(allowed(*c), (std::vector<int>{'?'}));

  // Any token but one, the end of generation among them where the grammar can end.
  c = make("root ::= \"a\" !<[129]> \"b\"\n");
  c->accept('a');
  std::vector<int> all_but;
  for (int id = 0; id < int(texts.size()); ++id)
    if (id != 129) all_but.push_back(id);
  EXPECT_EQ(allowed(*c), all_but);
  c->accept(130);  // half a character, taken whole as a token
  EXPECT_EQ(allowed(*c), (std::vector<int>{'b'}));
  c->accept('b');
  EXPECT_TRUE(c->finished());

  // Repeated: free tokens until the closing one, then text.
  c = make("root ::= (!<ctl>)* <ctl> \"yes\"\n");
  for (int id : {128, 130, 5, 132 - 1}) {
    ASSERT_EQ(allowed(*c).size(), texts.size()) << id;  // <ctl> as well as every other
    c->accept(id);
  }
  c->accept(135);
  EXPECT_EQ(allowed(*c), (std::vector<int>{'y', 128, 134}));
}

TEST(GrammarConstraint, RebuiltTablesGoOnAsBefore) {
  auto g = compile("root ::= item+\nitem ::= \"(\" item* \")\" | [a-c]\n");
  GrammarAutomaton a(g), b(g);
  const std::string text = "a((b)(c(a)))b((";
  GrammarState sa{&a, a.start()}, sb{&b, b.start()};
  for (size_t i = 0; i < text.size(); ++i) {
    ASSERT_TRUE(sa.feed(uint8_t(text[i])));
    ASSERT_TRUE(sb.feed(uint8_t(text[i])));
    sb.set = b.compact(sb.set);  // every step from the current configuration alone
    EXPECT_EQ(sa.can_end(), sb.can_end()) << i;
  }
  for (const std::string tail : {"))", ")x", "a)", ")))"}) {
    GrammarState ta = sa, tb = sb;
    EXPECT_EQ(test::accepted(ta, tail), test::accepted(tb, tail)) << tail;
  }
  EXPECT_LT(b.n_sets(), a.n_sets());
}

}  // namespace
}  // namespace zinc::engine
