// Forced calls in Qwen's XML form: XmlCallPrefix against written calls, and its constraint's mask
// against feeding every token.
#include "engine/xml_call.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "recogniser_checks.h"

namespace zinc::engine {
namespace {

using Json = nlohmann::ordered_json;

std::vector<JsonSchema::Tool> tools() {
  return {{"get_weather", Json::parse(R"({"type": "object", "properties": {
              "city": {"type": "string", "minLength": 2, "maxLength": 12},
              "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
              "days": {"type": "integer"},
              "hours": {"type": "array", "items": {"type": "integer"}, "maxItems": 3},
              "detail": {"anyOf": [{"type": "boolean"}, {"type": "null"}]}},
            "required": ["city", "days"]})")},
          {"write_file", Json::parse(R"({"type": "object", "properties": {"path": {"type": "string"}, "content": {"type": "string"},
            "mode": {"type": "string", "pattern": "^[0-7]{3}\n?$"}}, "required": ["path", "content"]})")},
          {"ping", nullptr}};
}

std::shared_ptr<const XmlCall> compiled() {
  auto c = XmlCall::compile(tools());
  EXPECT_TRUE(c.ok()) << c.status().message();
  return c.ok() ? *c : nullptr;
}

size_t accepted(const XmlCall& call, const std::string& text) { return test::accepted(XmlCallPrefix(&call), text); }
bool takes_whole(const XmlCall& call, const std::string& text) { return test::takes_whole(XmlCallPrefix(&call), text); }

std::string call_text(const std::string& name, const std::vector<std::pair<std::string, std::string>>& params) {
  std::string t = "<tool_call>\n<function=" + name + ">\n";
  for (const auto& [key, value] : params) t += "<parameter=" + key + ">\n" + value + "\n</parameter>\n";
  return t + "</function>\n</tool_call>";
}

TEST(XmlCall, TakesCallsOfTheToolsAsTheirParametersSay) {
  auto call = compiled();
  ASSERT_TRUE(call);
  for (const std::string& good : {
           call_text("get_weather", {{"city", "Oslo"}, {"days", "3"}}),
           call_text("get_weather", {{"days", "-2"}, {"unit", "fahrenheit"}, {"city", "S\xc3\xa3o Paulo"}}),
           call_text("get_weather", {{"city", "a \"b\" \\c"}, {"days", "0"}, {"hours", "[1, 2]"}, {"detail", "null"}}),
           call_text("get_weather", {{"city", "x\ny"}, {"days", "1"}, {"detail", "true"}}),
           call_text("write_file", {{"path", "a.html"}, {"content", "<p>hi</p>\n</div>\n<parameter=x>"}}),
           call_text("write_file", {{"content", ""}, {"path", "</paramete"}}),
           call_text("write_file", {{"path", "a"}, {"content", "b"}, {"mode", "644"}}),
           call_text("write_file", {{"path", "a"}, {"content", "b"}, {"mode", "644\n"}}),
           call_text("ping", {})}) {
    EXPECT_TRUE(takes_whole(*call, good)) << good;
  }
  for (const std::string& bad : {
           call_text("get_weather", {{"city", "Oslo"}}),                           // days is required
           call_text("get_weather", {{"city", "O"}, {"days", "3"}}),               // minLength
           call_text("get_weather", {{"city", "Oslo Oslo Oslo"}, {"days", "3"}}),  // maxLength
           call_text("get_weather", {{"city", "Oslo"}, {"days", "3.5"}}),
           call_text("get_weather", {{"city", "Oslo"}, {"days", "\"3\""}}),
           call_text("get_weather", {{"city", "Oslo"}, {"days", "3"}, {"days", "4"}}),  // once
           call_text("get_weather", {{"city", "Oslo"}, {"days", "3"}, {"unit", "kelvin"}}),
           call_text("get_weather", {{"city", "Oslo"}, {"days", "3"}, {"hours", "[1,2,3,4]"}}),
           call_text("get_weather", {{"city", "Oslo"}, {"days", "3"}, {"zone", "UTC"}}),
           call_text("write_file", {{"path", "a</parameter>b"}, {"content", "x"}}),
           call_text("write_file", {{"path", "a"}, {"content", "</tool_call>"}}),
           call_text("write_file", {{"path", "a"}, {"content", "x</function>"}}),
           call_text("write_file", {{"path", "\xc3"}, {"content", "x"}}),
           call_text("write_file", {{"path", "a"}, {"content", "b"}, {"mode", "648"}}),
           call_text("write_file", {{"path", "a"}, {"content", "b"}, {"mode", "6444"}}),
           call_text("write_file", {{"path", "a"}, {"content", "b"}, {"mode", "644\n\n"}}),
           call_text("other", {}),
           call_text("ping", {{"x", "1"}}),
           std::string("<tool_call>\n<function=ping>\n</function>"),
           std::string("<function=ping>\n</function>\n</tool_call>")}) {
    EXPECT_FALSE(takes_whole(*call, bad)) << bad;
  }
  // A number needs what follows to end; the newline before </parameter> ends it.
  const std::string days = "<tool_call>\n<function=get_weather>\n<parameter=days>\n12\n</parameter>\n";
  EXPECT_EQ(accepted(*call, days), days.size());
  const std::string spaced = "<tool_call>\n<function=get_weather>\n<parameter=days>\n12 \n";
  EXPECT_EQ(accepted(*call, spaced), spaced.find(' '));
}

TEST(XmlCall, RefusesNamesItCannotWrite) {
  auto bad = XmlCall::compile({{"a>b", nullptr}});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("<function="), std::string::npos);
  auto key = XmlCall::compile({{"f", Json::parse(R"({"type": "object", "properties": {"a\nb": {"type": "integer"}}})")}});
  ASSERT_FALSE(key.ok());
  auto multiple = XmlCall::compile({{"f", Json::parse(R"({"type": "object", "properties": {"a": {"type": "number", "multipleOf": 2}}})")}});
  ASSERT_FALSE(multiple.ok());
  EXPECT_NE(multiple.status().message().find("multipleOf is held only on integers"), std::string::npos);
}

TEST(XmlCallConstraint, MaskMatchesFeedingEveryToken) {
  std::mt19937 rng(3);
  std::vector<std::string> texts;
  for (int b = 0; b < 256; ++b) texts.push_back(std::string(1, char(b)));
  const std::vector<std::string> pieces = {"<", "</", "parameter", "function", "tool_call", ">", "\n", "=", "get_weather", "city",
                                           "days", "Oslo", "12", " ", "\"", "[", "]", ",", "true", "null", "unit", "celsius",
                                           "\xc3\xa9", "\xc3", "ping", "path", "content"};
  for (int n = 0; n < 6000; ++n) {
    std::string t;
    for (int k = int(1 + rng() % 4); k > 0; --k) t += pieces[rng() % pieces.size()];
    texts.push_back(t);
  }
  auto vocab = std::make_shared<const TokenVocab>(texts);
  auto call = compiled();
  ASSERT_TRUE(call);
  const std::string doc = call_text("get_weather", {{"unit", "celsius"}, {"city", "Oslo \xc3\xa9</p"}, {"days", "12"},
                                                    {"hours", "[1, 2]"}, {"detail", "true"}});
  ASSERT_TRUE(takes_whole(*call, doc));
  XmlCallConstraint c(vocab, XmlCallPrefix(call.get()), {}, call);
  test::expect_mask_matches_feeding(c, XmlCallPrefix(call.get()), texts, doc);
}

}  // namespace
}  // namespace zinc::engine
