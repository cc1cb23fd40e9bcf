// Structured outputs: JsonSchema::compile's subset and its errors, SchemaPrefix against a
// reference check of the same subset on random schemas with conforming and mutated documents, and
// SchemaConstraint's mask against feeding every token.
#include "engine/json_schema.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <regex>
#include <string>
#include <vector>

namespace zinc::engine {
namespace {

using Json = nlohmann::ordered_json;

std::shared_ptr<const JsonSchema> compiled(const Json& schema) {
  auto s = JsonSchema::compile(schema);
  EXPECT_TRUE(s.ok()) << s.status().message() << "\n" << schema.dump();
  return s.ok() ? *s : nullptr;
}

// Bytes of `text` the schema's recogniser takes; *complete: whether it then holds a whole document.
size_t accepted(const JsonSchema& schema, const std::string& text, bool* complete = nullptr) {
  SchemaPrefix s(&schema);
  for (size_t i = 0; i < text.size(); ++i)
    if (!s.feed(uint8_t(text[i]))) return i;
  if (complete) *complete = s.complete();
  return text.size();
}
bool takes_whole(const JsonSchema& schema, const std::string& text) {
  bool complete = false;
  return accepted(schema, text, &complete) == text.size() && complete;
}

// The reference: does `v` (keys in their written order) conform to `schema` as the subset reads
// it (properties in order, required present, no other keys)?
bool conforms(const Json& schema, const Json& v) {
  if (schema.contains("const")) return v == schema["const"];
  if (schema.contains("enum")) {
    for (const auto& e : schema["enum"])
      if (e == v) return true;
    return false;
  }
  Json type = schema["type"];
  if (type.is_array()) {
    if (v.is_null()) return true;
    type = type[0];
  }
  if (type == "string") return v.is_string();
  if (type == "integer") return v.is_number_integer();
  if (type == "number") return v.is_number();
  if (type == "boolean") return v.is_boolean();
  if (type == "null") return v.is_null();
  if (type == "array") {
    if (!v.is_array() || v.size() < schema.value("minItems", size_t(0)) || v.size() > schema.value("maxItems", size_t(1) << 30))
      return false;
    for (const auto& x : v)
      if (!conforms(schema["items"], x)) return false;
    return true;
  }
  if (!v.is_object()) return false;
  const Json props = schema.value("properties", Json::object()), required = schema.value("required", Json::array());
  auto it = v.begin();
  for (const auto& [name, sub] : props.items()) {
    const bool req = std::find(required.begin(), required.end(), Json(name)) != required.end();
    if (it != v.end() && it.key() == name) {
      if (!conforms(sub, it.value())) return false;
      ++it;
    } else if (req) {
      return false;
    }
  }
  return it == v.end();
}

Json random_schema(std::mt19937& rng, int depth) {
  const int kind = int(rng() % (depth >= 3 ? 6 : 9));
  switch (kind) {
    case 0: return {{"type", "string"}};
    case 1: return {{"type", "integer"}};
    case 2: return {{"type", "number"}, {"description", "ignored"}};
    case 3: return {{"type", "boolean"}};
    case 4: return {{"enum", Json::array({"red", 12, 1, nullptr, true, "r"})}};  // scalars: arrays and objects are matched compact
    case 5: return {{"type", Json::array({"string", "null"})}};
    case 6: return {{"const", "fixed"}};
    case 7: {
      Json s = {{"type", "array"}, {"items", random_schema(rng, depth + 1)}};
      if (rng() % 2) s["minItems"] = rng() % 2;
      if (rng() % 2) s["maxItems"] = 1 + rng() % 3;
      return s;
    }
    default: {
      Json props = Json::object(), required = Json::array();
      for (int i = int(rng() % 4); i > 0; --i) {
        const std::string name = "p" + std::to_string(rng() % 6);
        if (props.contains(name)) continue;
        props[name] = random_schema(rng, depth + 1);
        if (rng() % 3) required.push_back(name);
      }
      return {{"type", "object"}, {"properties", props}, {"required", required}, {"additionalProperties", false}};
    }
  }
}

Json random_value(std::mt19937& rng, int depth);

// A document that conforms to `schema` (most of the time; `conforms` decides).
Json instance(std::mt19937& rng, const Json& schema) {
  if (schema.contains("const")) return schema["const"];
  if (schema.contains("enum")) return schema["enum"][rng() % schema["enum"].size()];
  Json type = schema["type"];
  if (type.is_array()) {
    if (rng() % 3 == 0) return nullptr;
    type = type[0];
  }
  if (type == "string") return std::string("s\"\\\n") + char('a' + rng() % 26);
  if (type == "integer") return int64_t(rng() % 2000) - 1000;
  if (type == "number") return std::ldexp(double(int32_t(rng())), -int(rng() % 30));
  if (type == "boolean") return bool(rng() & 1);
  if (type == "array") {
    const size_t lo = schema.value("minItems", size_t(0)), hi = std::min<size_t>(schema.value("maxItems", size_t(3)), 3);
    Json a = Json::array();
    for (size_t n = lo + (hi > lo ? rng() % (hi - lo + 1) : 0); n > 0; --n) a.push_back(instance(rng, schema["items"]));
    return a;
  }
  Json o = Json::object();
  const Json required = schema.value("required", Json::array());
  for (const auto& [name, sub] : schema["properties"].items()) {
    const bool req = std::find(required.begin(), required.end(), Json(name)) != required.end();
    if (req || rng() % 2) o[name] = instance(rng, sub);
  }
  return o;
}

Json object_schema(Json props, Json required) {
  return {{"type", "object"}, {"properties", std::move(props)}, {"required", std::move(required)}};
}

TEST(JsonSchema, CompileRefusesWhatItCannotHoldOutputTo) {
  const Json person = object_schema({{"name", {{"type", "string"}}}}, {"name"});
  EXPECT_TRUE(JsonSchema::compile(person).ok());
  auto message = [](const Json& s) {
    auto r = JsonSchema::compile(s);
    return r.ok() ? std::string("compiled") : r.status().message();
  };
  EXPECT_NE(message({{"type", "string"}}).find("top level"), std::string::npos);
  EXPECT_NE(message(object_schema({{"d", {{"type", "string"}, {"format", "date"}}}}, Json::array())).find("'format'"), std::string::npos);
  EXPECT_NE(message(object_schema({{"d", {{"anyOf", Json::array()}}}}, Json::array())).find("'anyOf'"), std::string::npos);
  EXPECT_NE(message(object_schema({{"d", {{"$ref", "#/x"}}}}, Json::array())).find("'$ref'"), std::string::npos);
  EXPECT_NE(message(object_schema({{"d", Json::object()}}, Json::array())).find("needs a 'type'"), std::string::npos);
  EXPECT_NE(message(object_schema({{"d", {{"type", "date"}}}}, Json::array())).find("'date'"), std::string::npos);
  EXPECT_NE(message(object_schema({{"d", {{"type", {"string", "integer"}}}}}, Json::array())).find("needs a 'type'"),
            std::string::npos);
  EXPECT_NE(message(object_schema({{"d", {{"type", "string"}}}}, {"e"})).find("not in its properties"), std::string::npos);
  EXPECT_NE(message(object_schema({{"d", {{"type", "array"}}}}, Json::array())).find("'items'"), std::string::npos);
  EXPECT_NE(message(object_schema({{"d", {{"type", "array"}, {"items", {{"type", "string"}}}, {"minItems", 3}, {"maxItems", 1}}}},
                                  Json::array()))
                .find("minItems"),
            std::string::npos);
  EXPECT_NE(message(object_schema({{std::string(5000, 'k'), {{"type", "string"}}}}, Json::array())).find("longer"), std::string::npos);
  EXPECT_NE(message(object_schema({{"d", {{"const", std::string(5000, 'v')}}}}, Json::array())).find("longer"), std::string::npos);
  Json deep = {{"type", "string"}};
  for (int i = 0; i < 20; ++i) deep = object_schema({{"x", deep}}, {"x"});
  EXPECT_NE(message(deep).find("deep"), std::string::npos);
}

TEST(SchemaPrefix, HoldsDocumentsToTheSchema) {
  const Json schema = object_schema({{"name", {{"type", "string"}}},
                                     {"age", {{"type", "integer"}}},
                                     {"score", {{"type", "number"}}},
                                     {"tags", {{"type", "array"}, {"items", {{"enum", {"a", "b", 3}}}}, {"maxItems", 2}}},
                                     {"ok", {{"type", {"boolean", "null"}}}}},
                                    {"name", "age"});
  auto s = compiled(schema);
  ASSERT_TRUE(s);
  for (const std::string good : {R"({"name":"Ann","age":31})", R"({"name": "A\"\u00e9", "age": -0, "score": 1.5e-3, "ok": null})",
                                 "{\n  \"name\": \"B\",\n  \"age\": 7,\n  \"tags\": [\"a\", 3]\n}",
                                 R"({"name":"C","age":1,"tags":[],"ok":true})"}) {
    EXPECT_TRUE(takes_whole(*s, good)) << good;
    EXPECT_TRUE(conforms(schema, Json::parse(good))) << good;
  }
  for (const std::string bad : {R"({"age":31,"name":"Ann"})",            // order
                                R"({"name":"Ann"})",                      // age required
                                R"({"name":"Ann","score":1.5})",          // age skipped
                                R"({"name":"Ann","age":31,"x":1})",       // no other keys
                                R"({"name":3,"age":31})",                 // type
                                R"({"name":"A","age":3.5})",              // integer
                                R"({"name":"A","age":1,"tags":["c"]})",   // enum
                                R"({"name":"A","age":1,"tags":["a","b",3]})",  // maxItems
                                R"({"name":"A","age":1,"ok":nul})",
                                R"( {"name":"A","age":1})",
                                R"({"name":"A","age":1,})"}) {
    EXPECT_FALSE(takes_whole(*s, bad)) << bad;
  }
  bool complete = true;
  EXPECT_EQ(accepted(*s, R"({"name":"A","age":1)", &complete), 19u);
  EXPECT_FALSE(complete);
  // Enum values that are prefixes of each other are told apart by what follows.
  auto e = compiled(object_schema({{"n", {{"enum", {1, 12, "x"}}}}}, {"n"}));
  ASSERT_TRUE(e);
  EXPECT_TRUE(takes_whole(*e, R"({"n":1})"));
  EXPECT_TRUE(takes_whole(*e, R"({"n":12})"));
  EXPECT_TRUE(takes_whole(*e, R"({"n": 12 })"));
  EXPECT_FALSE(takes_whole(*e, R"({"n":123})"));
  EXPECT_FALSE(takes_whole(*e, R"({"n":2})"));
}

// Random schemas: every conforming document (compact or indented) is taken whole, and whatever
// a mutated one is taken whole as must conform and parse.
TEST(SchemaPrefix, AgreesWithTheReferenceOnRandomSchemas) {
  std::mt19937 rng(5);
  const std::string alphabet = "{}[]\":,.-0123456789eptrufalsn \nrdxp";
  int conforming = 0, mutated_whole = 0;
  for (int n = 0; n < 400; ++n) {
    Json schema = random_schema(rng, 1);
    if (schema.value("type", Json()) != "object") schema = object_schema({{"v", schema}}, {"v"});
    auto s = compiled(schema);
    ASSERT_TRUE(s);
    for (int k = 0; k < 8; ++k) {
      const Json doc = instance(rng, schema);
      if (!conforms(schema, doc)) continue;
      const std::string text = doc.dump(k % 2 ? 2 : -1);
      ASSERT_TRUE(takes_whole(*s, text)) << schema.dump() << "\n" << text;
      ++conforming;
      std::string m = text;
      for (int j = int(rng() % 3) + 1; j > 0; --j) {
        const size_t at = rng() % (m.size() + 1);
        const char c = alphabet[rng() % alphabet.size()];
        if (rng() % 2) m.insert(m.begin() + at, c);
        else if (at < m.size()) m[at] = c;
      }
      if (std::regex_search(m, std::regex("[eE][-+]?[0-9]{3,}"))) continue;  // nlohmann refuses numbers past a double
      if (takes_whole(*s, m)) {
        const Json parsed = Json::parse(m, nullptr, false);
        ASSERT_FALSE(parsed.is_discarded()) << schema.dump() << "\n" << m;
        EXPECT_TRUE(conforms(schema, parsed)) << schema.dump() << "\n" << m;
        ++mutated_whole;
      }
    }
  }
  EXPECT_GT(conforming, 1000);
  EXPECT_GT(mutated_whole, 20);
}

// A forced call: the name picks which parameters schema the arguments follow, inside the markup.
TEST(JsonSchema, ToolCallsFollowTheNamedToolsParameters) {
  const std::vector<JsonSchema::Tool> tools = {
      {"get_weather", object_schema({{"city", {{"type", "string"}}}}, {"city"})},
      {"get_time", object_schema({{"zone", {{"enum", {"CET", "UTC"}}}}}, {"zone"})},
      {"ping", nullptr}};
  auto call = JsonSchema::compile_call(tools, "arguments");
  ASSERT_TRUE(call.ok()) << call.status().message();
  const std::string before = "<tool_call>\n", after = "\n</tool_call>";
  auto takes = [&](const std::string& text) {
    FramedPrefix<SchemaPrefix> s(&before, SchemaPrefix(call->get()), &after);
    for (char c : text)
      if (!s.feed(uint8_t(c))) return false;
    return s.complete();
  };
  EXPECT_TRUE(takes("<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>"));
  EXPECT_TRUE(takes("<tool_call>\n{\"name\": \"get_time\", \"arguments\": {\"zone\": \"UTC\"}}\n</tool_call>"));
  EXPECT_TRUE(takes("<tool_call>\n{\"name\":\"ping\",\"arguments\":{}}\n</tool_call>"));
  EXPECT_FALSE(takes("<tool_call>\n{\"name\": \"get_time\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>"));
  EXPECT_FALSE(takes("<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"zone\": \"UTC\"}}\n</tool_call>"));
  EXPECT_FALSE(takes("<tool_call>\n{\"name\": \"other\", \"arguments\": {}}\n</tool_call>"));
  EXPECT_FALSE(takes("<tool_call>\n{\"name\": \"ping\", \"arguments\": {}}"));  // the closing markup is due
  EXPECT_FALSE(takes("{\"name\": \"ping\", \"arguments\": {}}\n</tool_call>"));
  // Llama 3's form: no markup, "parameters".
  auto llama = JsonSchema::compile_call(tools, "parameters");
  ASSERT_TRUE(llama.ok());
  const std::string none;
  FramedPrefix<SchemaPrefix> s(&none, SchemaPrefix(llama->get()), &none);
  bool ok = true;
  for (char c : std::string("{\"name\": \"get_time\", \"parameters\": {\"zone\": \"CET\"}}")) ok = ok && s.feed(uint8_t(c));
  EXPECT_TRUE(ok && s.complete());
  // A tool whose parameters use a keyword outside the subset cannot be forced.
  auto bad = JsonSchema::compile_call({{"f", object_schema({{"n", {{"type", "integer"}, {"minimum", 0}}}}, Json::array())}}, "arguments");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("'minimum'"), std::string::npos) << bad.status().message();
}

// The constraint allows exactly the tokens whose whole text the recogniser takes.
TEST(SchemaConstraint, MaskMatchesFeedingEveryToken) {
  std::mt19937 rng(9);
  std::vector<std::string> texts;
  for (int b = 0; b < 256; ++b) texts.push_back(std::string(1, char(b)));
  const std::string alphabet = "{}[]\":,.-+eE0123456789truefalsn \n\tagescorednmx";
  for (int n = 0; n < 20000; ++n) {
    std::string t;
    for (int k = int(1 + rng() % 8); k > 0; --k) t += alphabet[rng() % alphabet.size()];
    texts.push_back(t);
  }
  texts.push_back("\"name\"");
  texts.push_back("\"age\":");
  auto vocab = std::make_shared<const TokenVocab>(texts);
  std::vector<int32_t> byte_token(256);
  for (int b = 0; b < 256; ++b) byte_token[b] = b;
  const Json schema = object_schema({{"name", {{"type", "string"}}}, {"age", {{"type", "integer"}}},
                                     {"tags", {{"type", "array"}, {"items", {{"enum", {"red", 1, 12}}}}}}},
                                    {"name", "tags"});
  auto s = compiled(schema);
  ASSERT_TRUE(s);
  const std::string doc = R"({"name": "x\"y", "age": -12, "tags": [12, "red", 1]})";
  SchemaConstraint c(vocab, SchemaPrefix(s.get()), {}, s);
  SchemaPrefix reference(s.get());
  for (size_t pos = 0;; ++pos) {
    std::vector<float> logits(texts.size(), 0.0f);
    c.mask(logits);
    for (size_t id = 0; id < texts.size(); ++id) {
      SchemaPrefix st = reference;
      bool want = !texts[id].empty();
      for (char ch : texts[id]) want = want && st.feed(uint8_t(ch));
      ASSERT_EQ(!std::isinf(logits[id]), want) << "token '" << texts[id] << "' after '" << doc.substr(0, pos) << "'";
    }
    if (pos == doc.size()) break;
    c.accept(byte_token[uint8_t(doc[pos])]);
    ASSERT_TRUE(reference.feed(uint8_t(doc[pos])));
  }
  EXPECT_TRUE(c.finished());
}

}  // namespace
}  // namespace zinc::engine
