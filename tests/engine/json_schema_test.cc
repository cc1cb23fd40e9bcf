// Structured outputs: JsonSchema::compile's subset and its errors, SchemaPrefix against a
// reference check of the same subset on random schemas with conforming and mutated documents, and
// SchemaConstraint's mask against feeding every token.
#include "engine/json_schema.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <regex>
#include <string>
#include <tuple>
#include <vector>

#include "recogniser_checks.h"

namespace zinc::engine {
namespace {

using Json = nlohmann::ordered_json;

std::shared_ptr<const JsonSchema> compiled(const Json& schema) {
  auto s = JsonSchema::compile(schema);
  EXPECT_TRUE(s.ok()) << s.status().message() << "\n" << schema.dump();
  return s.ok() ? *s : nullptr;
}

size_t accepted(const JsonSchema& schema, const std::string& text, bool* complete = nullptr) {
  return test::accepted(SchemaPrefix(&schema), text, complete);
}
bool takes_whole(const JsonSchema& schema, const std::string& text) { return test::takes_whole(SchemaPrefix(&schema), text); }

size_t code_points(const std::string& s) {
  return size_t(std::count_if(s.begin(), s.end(), [](char c) { return (uint8_t(c) & 0xC0) != 0x80; }));
}

const Json& resolve(const Json& schema, const Json& root) {
  return schema.contains("$ref") ? root.at(Json::json_pointer(schema["$ref"].get<std::string>().substr(1))) : schema;
}

// The reference: does `v` (keys in their written order) conform to `schema` as the subset reads
// it (properties in order, required present, no other keys)? `root`: what "#" names.
bool conforms(const Json& in, const Json& v, const Json& root) {
  const Json& schema = resolve(in, root);
  if (schema.contains("$ref")) return conforms(schema, v, root);
  for (const char* key : {"anyOf", "oneOf", "allOf"}) {
    if (!schema.contains(key)) continue;
    for (const auto& alt : schema[key])
      if (conforms(alt, v, root)) return true;
    return false;
  }
  if (schema.contains("const")) return v == schema["const"];
  if (schema.contains("enum")) {
    for (const auto& e : schema["enum"])
      if (e == v) return true;
    return false;
  }
  if (!schema.contains("type") && !schema.contains("properties") && !schema.contains("additionalProperties")) return true;  // {}
  if (schema.value("type", Json()).is_array()) {
    for (const auto& t : schema["type"]) {
      Json one = schema;
      one["type"] = t;
      if (conforms(one, v, root)) return true;
    }
    return false;
  }
  const Json type = schema.value("type", Json("object"));
  if (type == "string")
    return v.is_string() && code_points(v.get<std::string>()) >= schema.value("minLength", size_t(0)) &&
           code_points(v.get<std::string>()) <= schema.value("maxLength", size_t(1) << 30) &&
           (!schema.contains("pattern") || std::regex_search(v.get<std::string>(), std::regex(schema["pattern"].get<std::string>())));
  if (type == "integer" || type == "number") {
    if (type == "integer" ? !v.is_number_integer() : !v.is_number()) return false;
    const double x = v.get<double>();
    if (schema.contains("minimum") && x < schema["minimum"].get<double>()) return false;
    if (schema.contains("maximum") && x > schema["maximum"].get<double>()) return false;
    if (schema.contains("exclusiveMinimum") && x <= schema["exclusiveMinimum"].get<double>()) return false;
    if (schema.contains("exclusiveMaximum") && x >= schema["exclusiveMaximum"].get<double>()) return false;
    if (schema.contains("multipleOf") && std::fmod(x, schema["multipleOf"].get<double>()) != 0) return false;
    return true;
  }
  if (type == "boolean") return v.is_boolean();
  if (type == "null") return v.is_null();
  if (type == "array") {
    if (!v.is_array() || v.size() < schema.value("minItems", size_t(0)) || v.size() > schema.value("maxItems", size_t(1) << 30))
      return false;
    for (const auto& x : v)
      if (!conforms(schema["items"], x, root)) return false;
    return true;
  }
  if (!v.is_object()) return false;
  const Json props = schema.value("properties", Json::object()), required = schema.value("required", Json::array());
  const Json others = schema.value("additionalProperties", Json());
  const bool extras = others == true || others.is_object() || (others.is_null() && props.empty());
  std::vector<std::string> names;
  for (const auto& [name, sub] : props.items()) names.push_back(name);
  auto is_required = [&](size_t k) { return std::find(required.begin(), required.end(), Json(names[k])) != required.end(); };
  size_t next = 0;  // listed properties come in order; others anywhere
  for (const auto& [key, value] : v.items()) {
    const size_t j = size_t(std::find(names.begin(), names.end(), key) - names.begin());
    if (j == names.size()) {
      if (!extras || (others.is_object() && !conforms(others, value, root))) return false;
      continue;
    }
    if (j < next) return false;
    for (size_t k = next; k < j; ++k)
      if (is_required(k)) return false;
    if (!conforms(props[key], value, root)) return false;
    next = j + 1;
  }
  for (size_t k = next; k < names.size(); ++k)
    if (is_required(k)) return false;
  return true;
}
bool conforms(const Json& schema, const Json& v) { return conforms(schema, v, schema); }

// defs: where "$ref"s point ("#/$defs/<name>"), filled as they are made.
Json random_schema(std::mt19937& rng, int depth, Json& defs) {
  const int kind = int(rng() % (depth >= 3 ? 8 : 13));
  switch (kind) {
    case 0: return rng() % 4 ? Json{{"type", "string"}} : Json::object();  // {}: any value
    case 1:
    case 2: {
      Json s = {{"type", kind == 1 ? "integer" : "number"}, {"description", "ignored"}};
      const char* keys[] = {"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"};
      const double values[] = {-20, 0, 1.5, 7, 150};
      for (int k = int(rng() % 3); k > 0; --k) s[keys[rng() % 4]] = values[rng() % 5];
      if (kind == 1 && rng() % 3 == 0) s["multipleOf"] = 2 + rng() % 4;
      const Json wrapped = {{"type", "object"}, {"properties", {{"v", s}}}};
      if (!JsonSchema::compile(wrapped).ok()) s = {{"type", "integer"}};  // bounds that hold nothing
      return s;
    }
    case 3: return {{"type", "boolean"}};
    case 4: return {{"enum", Json::array({"red", 12, 1, nullptr, true, "r"})}};  // scalars: arrays and objects are matched compact
    case 5: return {{"type", Json::array({"string", "null"})}};
    case 6: return {{"const", "fixed"}};
    case 7: {
      Json s = {{"type", "string"}, {"maxLength", rng() % 6}};
      if (rng() % 2) s["minLength"] = rng() % 3;
      if (s.value("minLength", 0) > s["maxLength"]) s.erase("maxLength");
      // Patterns that std::regex reads the same over UTF-8 bytes as zinc over code points.
      const char* patterns[] = {"^[sx]*$", "x", "^(s|x|\xc3\xa9)+$", "\\\\", "^[^\\n]*$"};
      if (rng() % 2) s["pattern"] = patterns[rng() % 5];
      return s;
    }
    case 8: {
      Json s = {{"type", "array"}, {"items", random_schema(rng, depth + 1, defs)}};
      if (rng() % 2) s["minItems"] = rng() % 2;
      if (rng() % 2) s["maxItems"] = 1 + rng() % 3;
      return s;
    }
    case 9: {  // alternatives that may share long prefixes (objects with the same first keys)
      Json alts = Json::array();
      for (int i = int(2 + rng() % 2); i > 0; --i) alts.push_back(random_schema(rng, depth + 1, defs));
      return {{rng() % 2 ? "anyOf" : "oneOf", alts}};
    }
    case 10: {
      const char* types[] = {"string", "integer", "number", "boolean", "null"};
      return {{"type", Json::array({types[rng() % 5], types[rng() % 5], types[rng() % 5]})}};
    }
    case 11: {
      const std::string name = "D" + std::to_string(rng() % 4);
      if (!defs.contains(name)) {
        defs[name] = Json();  // taken before it is made, so a def may come back to itself
        defs[name] = random_schema(rng, depth + 1, defs);
      }
      return {{"$ref", "#/$defs/" + name}};
    }
    default: {
      Json props = Json::object(), required = Json::array();
      for (int i = int(rng() % 4); i > 0; --i) {
        const std::string name = "p" + std::to_string(rng() % 6);
        if (props.contains(name)) continue;
        props[name] = random_schema(rng, depth + 1, defs);
        if (rng() % 3) required.push_back(name);
      }
      Json o = {{"type", "object"}, {"properties", props}, {"required", required}};
      switch (rng() % 4) {  // absent: none where properties are listed, any where none are
        case 0: o["additionalProperties"] = false; break;
        case 1: o["additionalProperties"] = true; break;
        case 2: o["additionalProperties"] = {{"type", "integer"}}; break;
        default: break;
      }
      return o;
    }
  }
}

Json any_value(std::mt19937& rng, int depth) {
  switch (rng() % (depth > 4 ? 4 : 6)) {
    case 0: return "v\"";
    case 1: return int(rng() % 100) - 50;
    case 2: return rng() % 2 == 0;
    case 3: return nullptr;
    case 4: return Json::array({any_value(rng, depth + 1), 1.5});
    default: return {{"k", any_value(rng, depth + 1)}};
  }
}

// A document that conforms to `schema` (most of the time; `conforms` decides).
Json instance(std::mt19937& rng, const Json& in, const Json& root, int depth = 0) {
  const Json& schema = resolve(in, root);
  if (depth > 12) return nullptr;
  if (schema.contains("$ref")) return instance(rng, schema, root, depth + 1);
  for (const char* key : {"anyOf", "oneOf"})
    if (schema.contains(key)) return instance(rng, schema[key][rng() % schema[key].size()], root, depth + 1);
  if (schema.contains("const")) return schema["const"];
  if (schema.contains("enum")) return schema["enum"][rng() % schema["enum"].size()];
  if (!schema.contains("type") && !schema.contains("properties")) return any_value(rng, depth);
  Json type = schema["type"];
  if (type.is_array()) type = type[rng() % type.size()];
  if (type == "string") {
    const char* pieces[] = {"s", "\"", "\\", "\n", "é", "日", "x"};
    std::string t;
    const size_t lo = schema.value("minLength", size_t(0)), hi = std::min<size_t>(schema.value("maxLength", size_t(6)), 6);
    for (size_t n = lo + (hi > lo ? rng() % (hi - lo + 1) : 0); n > 0; --n) t += pieces[rng() % 7];
    return t;
  }
  if (type == "integer") return rng() % 2 ? int64_t(rng() % 2000) - 1000 : int64_t(rng() % 40) - 20;
  if (type == "number") {
    if (schema.size() > 2) return double(int(rng() % 400) - 200) / 8;  // bounded: written without an exponent
    return std::ldexp(double(int32_t(rng())), -int(rng() % 30));
  }
  if (type == "boolean") return bool(rng() & 1);
  if (type == "null") return nullptr;
  if (type == "array") {
    const size_t lo = schema.value("minItems", size_t(0)), hi = std::min<size_t>(schema.value("maxItems", size_t(3)), 3);
    Json a = Json::array();
    for (size_t n = lo + (hi > lo ? rng() % (hi - lo + 1) : 0); n > 0; --n) a.push_back(instance(rng, schema["items"], root, depth + 1));
    return a;
  }
  const Json props = schema.value("properties", Json::object()), others = schema.value("additionalProperties", Json());
  const bool extras = others == true || others.is_object() || (others.is_null() && props.empty());
  auto other = [&](Json& o) {
    if (extras && rng() % 3 == 0)
      o["x" + std::to_string(rng() % 3)] = others.is_object() ? instance(rng, others, root, depth + 1) : any_value(rng, depth + 1);
  };
  Json o = Json::object();
  const Json required = schema.value("required", Json::array());
  for (const auto& [name, sub] : props.items()) {
    other(o);
    const bool req = std::find(required.begin(), required.end(), Json(name)) != required.end();
    if (req || rng() % 2) o[name] = instance(rng, sub, root, depth + 1);
  }
  other(o);
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
  EXPECT_NE(message(object_schema({{"d", {{"type", "number"}, {"multipleOf", 3}}}}, Json::array())).find("only on integers"),
            std::string::npos);
  for (const Json m : {Json(0), Json(-5), Json(2.5), Json("3")})
    EXPECT_NE(message(object_schema({{"d", {{"type", "integer"}, {"multipleOf", m}}}}, Json::array())).find("positive integer"),
              std::string::npos)
        << m.dump();
  EXPECT_NE(message(object_schema({{"d", {{"type", "integer"}, {"minimum", 11}, {"maximum", 14}, {"multipleOf", 5}}}},
                                  Json::array()))
                .find("no multiple"),
            std::string::npos);
  EXPECT_NE(message(object_schema({{"d", {{"type", "object"}, {"patternProperties", Json::object()}}}}, Json::array()))
                .find("'patternProperties'"),
            std::string::npos);
  EXPECT_NE(message(object_schema({{"d", {{"type", "integer"}, {"minimum", 3}, {"maximum", 2}}}}, Json::array())).find("no integer"),
            std::string::npos);
  EXPECT_NE(message(object_schema({{"d", {{"type", "integer"}, {"exclusiveMinimum", 2}, {"exclusiveMaximum", 3}}}}, Json::array()))
                .find("no integer"),
            std::string::npos);
  EXPECT_NE(message(object_schema({{"d", {{"type", "number"}, {"minimum", "3"}}}}, Json::array())).find("must be a number"),
            std::string::npos);
  EXPECT_NE(message(object_schema({{"d", {{"type", "string"}, {"pattern", "(?=a)"}}}}, Json::array())).find("pattern: lookaround"),
            std::string::npos);
  EXPECT_NE(message(object_schema({{"d", {{"type", "string"}, {"format", "uri"}}}}, Json::array())).find("format \"uri\""),
            std::string::npos);
  EXPECT_NE(message(object_schema({{"d", {{"type", "string"}, {"format", "date"}, {"pattern", "a"}}}}, Json::array())).find("together"),
            std::string::npos);
  EXPECT_NE(message(object_schema({{"d", {{"anyOf", Json::array()}}}}, Json::array())).find("anyOf must be an array of 1 to"),
            std::string::npos);
  EXPECT_NE(message(object_schema({{"d", {{"anyOf", {{{"type", "string"}}}}, {"type", "string"}}}}, Json::array())).find("beside"),
            std::string::npos);
  EXPECT_NE(message(object_schema({{"d", {{"allOf", {{{"type", "string"}}, {{"type", "integer"}}}}}}}, Json::array())).find("disagree on 'type'"),
            std::string::npos);
  EXPECT_NE(message(object_schema({{"d", {{"allOf", {{{"enum", {1, 2}}}, {{"enum", {3}}}}}}}}, Json::array())).find("share no value"),
            std::string::npos);
  const Json any_and_more = Json::parse(R"({"allOf": [{"anyOf": [{"type": "string"}, {"type": "null"}]}, {"maxLength": 2}]})");
  EXPECT_NE(message(object_schema({{"d", any_and_more}}, Json::array())).find("anyOf"), std::string::npos);
  EXPECT_NE(message(object_schema({{"d", {{"allOf", Json::array()}}}}, Json::array())).find("allOf must be an array"), std::string::npos);
  EXPECT_NE(message(object_schema({{"d", {{"$ref", "#/x"}}}}, Json::array())).find("names nothing"), std::string::npos);
  EXPECT_NE(message(object_schema({{"d", {{"$ref", "https://example.com/s.json"}}}}, Json::array())).find("outside"),
            std::string::npos);
  Json self = object_schema({{"d", {{"$ref", "#/$defs/A"}}}}, Json::array());
  self["$defs"] = {{"A", {{"$ref", "#/$defs/B"}}}, {"B", {{"$ref", "#/$defs/A"}}}};
  EXPECT_NE(message(self).find("comes back to itself"), std::string::npos) << message(self);
  self["$defs"] = {{"A", {{"anyOf", {{{"type", "null"}}, {{"$ref", "#/$defs/A"}}}}}}};
  EXPECT_NE(message(self).find("contains itself"), std::string::npos) << message(self);
  EXPECT_NE(message({{"anyOf", {object_schema(Json::object(), Json::array()), {{"type", "null"}}}}}).find("top level"),
            std::string::npos);
  EXPECT_NE(message(object_schema({{"d", {{"type", "string"}, {"minLength", 3}, {"maxLength", 1}}}}, Json::array())).find("minLength"),
            std::string::npos);
  EXPECT_NE(message(object_schema({{"d", {{"minLength", 2}}}}, Json::array())).find("needs a 'type'"), std::string::npos);
  EXPECT_NE(message(object_schema({{"d", {{"type", "object"}, {"additionalProperties", 3}}}}, Json::array())).find("additionalProperties"),
            std::string::npos);
  EXPECT_NE(message(object_schema({{"d", {{"type", "date"}}}}, Json::array())).find("'date'"), std::string::npos);
  EXPECT_NE(message(object_schema({{"d", {{"type", {"string", 3}}}}}, Json::array())).find("must name types"), std::string::npos);
  EXPECT_NE(message(object_schema({{"d", {{"type", "string"}}}}, {"e"})).find("not in its properties"), std::string::npos);
  EXPECT_NE(message(object_schema({{"d", {{"type", "array"}}}}, Json::array())).find("'items'"), std::string::npos);
  EXPECT_NE(message(object_schema({{"d", {{"type", "array"}, {"items", {{"type", "string"}}}, {"minItems", 3}, {"maxItems", 1}}}},
                                  Json::array()))
                .find("minItems"),
            std::string::npos);
  EXPECT_NE(message(object_schema({{std::string(5000, 'k'), {{"type", "string"}}}}, Json::array())).find("longer"), std::string::npos);
  EXPECT_NE(message(object_schema({{"d", {{"const", std::string(5000, 'v')}}}}, Json::array())).find("longer"), std::string::npos);
  // A schema's patterns share one build budget (each alone would be fine), and a repeated one is built once.
  Json many = Json::object();
  for (int i = 0; i < 8; ++i) many["p" + std::to_string(i)] = {{"type", "string"}, {"pattern", "(a|.b){0,40}" + std::string(1, char('c' + i))}};
  EXPECT_NE(message(object_schema(many, Json::array())).find("too large"), std::string::npos);
  Json same = Json::object();
  for (int i = 0; i < 40; ++i) same["p" + std::to_string(i)] = {{"type", "string"}, {"pattern", "(a|.b){0,40}c"}};
  EXPECT_EQ(message(object_schema(same, Json::array())), "compiled");
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

// An anyOf keeps every reading open while the bytes fit more than one.
TEST(SchemaPrefix, FollowsEveryAlternativeOfAnAnyOf) {
  const Json circle = object_schema({{"kind", {{"const", "shape"}}}, {"r", {{"type", "number"}}}}, {"kind", "r"});
  const Json box = object_schema({{"kind", {{"const", "shape"}}}, {"w", {{"type", "integer"}}}, {"h", {{"type", "integer"}}}},
                                 {"kind", "w"});
  const Json schema = object_schema(
      {{"shapes", {{"type", "array"}, {"items", {{"anyOf", {circle, box}}}}}},
       {"note", {{"oneOf", {{{"type", "string"}, {"maxLength", 3}}, {{"type", "integer"}}, {{"type", "null"}}}}}},
       {"id", {{"type", {"integer", "string", "null"}}}}},
      {"shapes"});
  auto s = compiled(schema);
  ASSERT_TRUE(s);
  for (const std::string good : {R"({"shapes":[{"kind":"shape","r":1.5},{"kind":"shape","w":2},{"kind":"shape","w":2,"h":3}]})",
                                 R"({"shapes":[], "note": "abc", "id": "x"})", R"({"shapes":[], "note": 12, "id": 4})",
                                 R"({"shapes":[], "note": null, "id": null})"}) {
    EXPECT_TRUE(takes_whole(*s, good)) << good;
    EXPECT_TRUE(conforms(schema, Json::parse(good))) << good;
  }
  for (const std::string bad : {R"({"shapes":[{"kind":"shape","r":1.5,"w":2}]})", R"({"shapes":[{"kind":"shape","w":2.5}]})",
                                R"({"shapes":[{"kind":"shape"}]})", R"({"shapes":[{"kind":"shape","h":3}]})",
                                R"({"shapes":[], "note": "abcd"})", R"({"shapes":[], "note": 1.5})", R"({"shapes":[], "id": true})"}) {
    EXPECT_FALSE(takes_whole(*s, bad)) << bad;
    EXPECT_FALSE(conforms(schema, Json::parse(bad))) << bad;
  }
}

// What pydantic writes for a model with nested models, optional fields and a recursive type.
TEST(SchemaPrefix, FollowsRefsIntoDefsAndBackAgain) {
  const Json schema = Json::parse(R"({
    "$defs": {
      "Address": {"properties": {"city": {"title": "City", "type": "string"},
                                 "zip": {"anyOf": [{"type": "string"}, {"type": "null"}], "default": null}},
                  "required": ["city", "zip"], "title": "Address", "type": "object", "additionalProperties": false},
      "Node": {"properties": {"name": {"type": "string"},
                              "children": {"items": {"$ref": "#/$defs/Node"}, "type": "array"}},
               "required": ["name", "children"], "type": "object", "additionalProperties": false}
    },
    "properties": {"name": {"type": "string"}, "home": {"$ref": "#/$defs/Address"},
                   "work": {"anyOf": [{"$ref": "#/$defs/Address"}, {"type": "null"}]},
                   "tree": {"allOf": [{"$ref": "#/$defs/Node"}], "description": "pydantic v1 style"}},
    "required": ["name", "home", "work", "tree"], "title": "Person", "type": "object", "additionalProperties": false})");
  auto s = compiled(schema);
  ASSERT_TRUE(s);
  const std::string good =
      R"({"name":"Ann","home":{"city":"Oslo","zip":null},"work":{"city":"Bergen","zip":"5003"},)"
      R"("tree":{"name":"a","children":[{"name":"b","children":[]},{"name":"c","children":[{"name":"d","children":[]}]}]}})";
  EXPECT_TRUE(takes_whole(*s, good));
  EXPECT_TRUE(takes_whole(*s, R"({"name":"Ann","home":{"city":"Oslo","zip":null},"work":null,"tree":{"name":"a","children":[]}})"));
  EXPECT_FALSE(takes_whole(*s, R"({"name":"Ann","home":{"city":"Oslo"},"work":null,"tree":{"name":"a","children":[]}})"));
  EXPECT_FALSE(takes_whole(*s, R"({"name":"Ann","home":null,"work":null,"tree":{"name":"a","children":[]}})"));
  EXPECT_FALSE(takes_whole(*s, R"({"name":"Ann","home":{"city":"Oslo","zip":null},"work":null,"tree":{"name":"a","children":[{"name":"b"}]}})"));
  // A recursion deeper than the recogniser holds is cut off, not overrun.
  std::string deep = R"({"name":"Ann","home":{"city":"O","zip":null},"work":null,"tree":)";
  for (int i = 0; i < 40; ++i) deep += R"({"name":"n","children":[)";
  EXPECT_LT(accepted(*s, deep), deep.size());
  // A $ref at the top level names the object.
  Json top = {{"$ref", "#/$defs/Address"}, {"$defs", schema["$defs"]}};
  auto t = compiled(top);
  ASSERT_TRUE(t);
  EXPECT_TRUE(takes_whole(*t, R"({"city":"Oslo","zip":"0150"})"));
}

TEST(SchemaPrefix, MergesTheMembersOfAnAllOf) {
  // An object extending a $defs base, with a keyword beside the allOf.
  const Json inherits = Json::parse(R"({
    "$defs": {"Base": {"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"], "additionalProperties": false}},
    "allOf": [{"$ref": "#/$defs/Base"}, {"properties": {"b": {"type": "integer", "minimum": 0}}, "required": ["b"]}],
    "title": "Child"})");
  auto s = compiled(inherits);
  ASSERT_TRUE(s);
  EXPECT_TRUE(takes_whole(*s, R"({"a":"x","b":1})"));
  EXPECT_FALSE(takes_whole(*s, R"({"a":"x"})"));
  EXPECT_FALSE(takes_whole(*s, R"({"b":1})"));
  EXPECT_FALSE(takes_whole(*s, R"({"a":"x","b":-1})"));
  EXPECT_FALSE(takes_whole(*s, R"({"a":"x","b":1,"c":2})"));

  // Bounds tighten, enums intersect, a property in two members takes both schemas.
  auto t = compiled(Json::parse(R"({"type": "object", "required": ["s", "e", "o", "x"], "properties": {
    "s": {"allOf": [{"type": "string", "minLength": 2}, {"maxLength": 3}, {"minLength": 1}]},
    "e": {"allOf": [{"enum": [1, 2, 3]}, {"enum": [3, 2, 4]}]},
    "o": {"type": "object", "allOf": [{"properties": {"n": {"type": "integer", "minimum": 0}}},
                                      {"properties": {"n": {"maximum": 5}}, "required": ["n"]}]},
    "x": {"allOf": [{"type": "number"}, {"type": "integer"}]}}})"));
  ASSERT_TRUE(t);
  EXPECT_TRUE(takes_whole(*t, R"({"s":"ab","e":2,"o":{"n":5},"x":7})"));
  EXPECT_TRUE(takes_whole(*t, R"({"s":"abc","e":3,"o":{"n":0},"x":-1})"));
  EXPECT_FALSE(takes_whole(*t, R"({"s":"a","e":2,"o":{"n":5},"x":7})"));
  EXPECT_FALSE(takes_whole(*t, R"({"s":"abcd","e":2,"o":{"n":5},"x":7})"));
  EXPECT_FALSE(takes_whole(*t, R"({"s":"ab","e":1,"o":{"n":5},"x":7})"));
  EXPECT_FALSE(takes_whole(*t, R"({"s":"ab","e":4,"o":{"n":5},"x":7})"));
  EXPECT_FALSE(takes_whole(*t, R"({"s":"ab","e":2,"o":{"n":6},"x":7})"));
  EXPECT_FALSE(takes_whole(*t, R"({"s":"ab","e":2,"o":{},"x":7})"));
  EXPECT_FALSE(takes_whole(*t, R"({"s":"ab","e":2,"o":{"n":5},"x":7.5})"));
}

TEST(SchemaPrefix, CountsCodePointsAndChecksUtf8) {
  auto s = compiled(object_schema({{"s", {{"type", "string"}, {"minLength", 2}, {"maxLength", 3}}}}, {"s"}));
  ASSERT_TRUE(s);
  EXPECT_TRUE(takes_whole(*s, R"({"s":"ab"})"));
  EXPECT_TRUE(takes_whole(*s, "{\"s\":\"\xc3\xa9\xe6\x97\xa5\\n\"}"));  // é, 日 and an escape: 3
  EXPECT_TRUE(takes_whole(*s, R"({"s":"\u00e9x"})"));
  EXPECT_FALSE(takes_whole(*s, R"({"s":"a"})"));
  EXPECT_FALSE(takes_whole(*s, R"({"s":"abcd"})"));
  EXPECT_FALSE(takes_whole(*s, "{\"s\":\"\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\"}"));
  auto any = compiled(object_schema({{"s", {{"type", "string"}}}}, {"s"}));
  ASSERT_TRUE(any);
  EXPECT_TRUE(takes_whole(*any, "{\"s\":\"\xf0\x9f\x99\x82\"}"));
  for (const std::string bad : {"\xc3", "\x80", "\xc0\xaf", "\xed\xa0\x80", "\xf4\x90\x80\x80", "\xe6\x97"})
    EXPECT_FALSE(takes_whole(*any, "{\"s\":\"" + bad + "\"}")) << Json(bad).dump(-1, ' ', false, Json::error_handler_t::replace);
}

// Keys of no listed property: where additionalProperties allows them (or an object lists none),
// anywhere among the listed ones, never a listed name again; {} takes any value.
TEST(SchemaPrefix, TakesOtherKeysWhereTheSchemaAllowsThem) {
  auto any_object = compiled(object_schema({{"meta", {{"type", "object"}}}, {"v", Json::object()}}, {"meta"}));
  ASSERT_TRUE(any_object);
  EXPECT_TRUE(takes_whole(*any_object, R"({"meta": {"a": [1, {"b": null}], "c": "x\"y"}, "v": {"k": [true, null, 1.5e3]}})"));
  EXPECT_TRUE(takes_whole(*any_object, R"({"meta": {}, "v": "s"})"));
  EXPECT_FALSE(takes_whole(*any_object, R"({"meta": {"a"}})"));
  EXPECT_FALSE(takes_whole(*any_object, R"({"meta": {"a": 1,}})"));
  Json counts = object_schema({{"a", {{"type", "string"}}}, {"b", {{"type", "boolean"}}}}, {"a"});
  counts["additionalProperties"] = {{"type", "integer"}};
  auto c = compiled(counts);
  ASSERT_TRUE(c);
  EXPECT_TRUE(takes_whole(*c, R"({"x": 1, "a": "s", "y": 2, "b": true, "ab": 3})"));
  EXPECT_TRUE(takes_whole(*c, R"({"a": "s", "\u0061x": 1})"));
  EXPECT_FALSE(takes_whole(*c, R"({"x": "s", "a": "s"})"));
  EXPECT_FALSE(takes_whole(*c, R"({"a": "s", "a": "t"})"));
  EXPECT_FALSE(takes_whole(*c, R"({"b": true, "a": "s"})"));
  EXPECT_FALSE(takes_whole(*c, R"({"x": 1})"));
  auto closed = compiled(object_schema({{"a", {{"type", "string"}}}}, {"a"}));
  ASSERT_TRUE(closed);
  EXPECT_FALSE(takes_whole(*closed, R"({"a": "s", "x": 1})"));
  auto call = JsonSchema::compile_call({{"ping", nullptr}}, "arguments");
  ASSERT_TRUE(call.ok());
  EXPECT_TRUE(takes_whole(**call, R"({"name": "ping", "arguments": {}})"));
  EXPECT_FALSE(takes_whole(**call, R"({"name": "ping", "arguments": {"x": 1}})"));
}

// Bounds hold on every prefix: a number that could only grow past them is cut off where it starts.
TEST(SchemaPrefix, HoldsNumbersToTheirBounds) {
  auto one = [](const Json& schema) { return compiled(object_schema({{"n", schema}}, {"n"})); };
  auto doc = [](const std::string& v) { return "{\"n\":" + v + "}"; };
  auto age = one({{"type", "integer"}, {"minimum", 0}, {"maximum", 150}});
  ASSERT_TRUE(age);
  for (const char* good : {"0", "7", "150", "99", "-0"}) EXPECT_TRUE(takes_whole(*age, doc(good))) << good;
  for (const char* bad : {"-1", "151", "1500", "200"}) EXPECT_FALSE(takes_whole(*age, doc(bad))) << bad;
  EXPECT_EQ(accepted(*age, doc("200")), 7u);  // "2" could still be 2..150; "20" too; "200" cannot
  EXPECT_EQ(accepted(*age, doc("-1")), 6u);
  auto share = one({{"type", "number"}, {"exclusiveMinimum", 0}, {"maximum", 1}});
  ASSERT_TRUE(share);
  for (const char* good : {"0.5", "1", "1.0", "0.001", "1.000"}) EXPECT_TRUE(takes_whole(*share, doc(good))) << good;
  for (const char* bad : {"0", "0.0", "-0.5", "1.5", "1.0001", "2", "5e-1"}) EXPECT_FALSE(takes_whole(*share, doc(bad))) << bad;
  auto draft4 = one({{"type", "integer"}, {"minimum", 1}, {"exclusiveMinimum", true}, {"maximum", 3}, {"exclusiveMaximum", true}});
  ASSERT_TRUE(draft4);
  EXPECT_TRUE(takes_whole(*draft4, doc("2")));
  EXPECT_FALSE(takes_whole(*draft4, doc("1")));
  EXPECT_FALSE(takes_whole(*draft4, doc("3")));
  auto negative = one({{"type", "number"}, {"maximum", -10.5}});
  ASSERT_TRUE(negative);
  EXPECT_TRUE(takes_whole(*negative, doc("-10.5")));
  EXPECT_TRUE(takes_whole(*negative, doc("-12345")));
  EXPECT_FALSE(takes_whole(*negative, doc("-10.4")));
  EXPECT_FALSE(takes_whole(*negative, doc("3")));
  EXPECT_TRUE(takes_whole(*one({{"type", "number"}}), doc("5e-1")));  // unbounded numbers keep exponents
  auto fives = one({{"type", "integer"}, {"minimum", -12}, {"maximum", 100}, {"multipleOf", 5}});
  ASSERT_TRUE(fives);
  for (const char* good : {"0", "5", "-10", "100", "45", "-0"}) EXPECT_TRUE(takes_whole(*fives, doc(good))) << good;
  for (const char* bad : {"3", "-12", "105", "101", "-15", "46"}) EXPECT_FALSE(takes_whole(*fives, doc(bad))) << bad;
  EXPECT_EQ(accepted(*fives, doc("101")), 7u);  // "10" could still be 10 or 100; "101" cannot
  EXPECT_EQ(accepted(*fives, doc("-12")), 7u);  // "-1" could be -10
  auto big = one({{"type", "integer"}, {"multipleOf", 1000000007}});  // no bounds: any prefix extends to a multiple
  ASSERT_TRUE(big);
  EXPECT_TRUE(takes_whole(*big, doc("2000000014")));
  EXPECT_TRUE(takes_whole(*big, doc("-1000000007")));
  EXPECT_FALSE(takes_whole(*big, doc("2000000015")));
  EXPECT_EQ(accepted(*big, doc("99999")), 10u);
}

// "pattern" reads the string's code points (escapes decoded, surrogate pairs joined); "format"
// is a pattern too.
TEST(SchemaPrefix, HoldsStringsToPatternsAndFormats) {
  auto one = [](const Json& string_schema) { return compiled(object_schema({{"s", string_schema}}, {"s"})); };
  auto doc = [](const std::string& body) { return "{\"s\":\"" + body + "\"}"; };
  auto code = one({{"type", "string"}, {"pattern", "^[A-Z]{2}-\\d{3}$"}});
  ASSERT_TRUE(code);
  EXPECT_TRUE(takes_whole(*code, doc("AB-123")));
  for (const char* bad : {"AB-12", "ab-123", "AB-1234", "AB\\u002d123x"}) EXPECT_FALSE(takes_whole(*code, doc(bad))) << bad;
  EXPECT_TRUE(takes_whole(*code, doc("AB\\u002d123")));
  auto search = one({{"type", "string"}, {"pattern", "ab"}});
  ASSERT_TRUE(search);
  EXPECT_TRUE(takes_whole(*search, doc("xxaby")));
  EXPECT_FALSE(takes_whole(*search, doc("xaxb")));
  auto lines = one({{"type", "string"}, {"pattern", "^a\nb\"$"}});
  ASSERT_TRUE(lines);
  EXPECT_TRUE(takes_whole(*lines, doc("a\\nb\\\"")));
  EXPECT_FALSE(takes_whole(*lines, doc("a\\\\nb\\\"")));
  auto astral = one({{"type", "string"}, {"pattern", "^.é$"}, {"maxLength", 2}});
  ASSERT_TRUE(astral);
  EXPECT_TRUE(takes_whole(*astral, doc("\\ud83d\\ude00\\u00e9")));  // a pair is one code point
  EXPECT_TRUE(takes_whole(*astral, doc("\xf0\x9f\x98\x80\xc3\xa9")));
  EXPECT_FALSE(takes_whole(*astral, doc("\\ud83d\\u00e9")));
  EXPECT_FALSE(takes_whole(*astral, doc("\\ude00\\u00e9")));
  const std::vector<std::tuple<const char*, std::vector<const char*>, std::vector<const char*>>> formats = {
      {"date", {"2024-02-29", "1999-12-31"}, {"2024-13-01", "2024-1-01", "24-01-01", "2024-01-32"}},
      {"time", {"10:00:00Z", "23:59:60.123+01:00"}, {"24:00:00Z", "10:00Z", "10:00:00"}},
      {"date-time", {"2024-01-01T10:00:00Z", "2024-01-01T10:00:00.5-05:30"}, {"2024-01-01 10:00:00Z", "2024-01-01T10:00:00"}},
      {"uuid", {"123e4567-e89b-12d3-a456-426614174000"}, {"123e4567e89b12d3a456426614174000", "123e4567-e89b-12d3-a456-42661417400g"}},
      {"email", {"a.b+c@example.co.uk", "x@y.z"}, {"a@b", "@b.c", "a b@c.d", "a@-b.c"}},
      {"ipv4", {"192.168.0.1", "0.0.0.0", "255.255.255.255"}, {"256.1.1.1", "1.2.3", "01.2.3.4"}},
      {"hostname", {"example.com", "a-b.c"}, {"-a.com", "a..b", "a_b.com"}}};
  for (const auto& [format, good, bad] : formats) {
    auto s = one({{"type", "string"}, {"format", format}});
    ASSERT_TRUE(s) << format;
    for (const char* g : good) EXPECT_TRUE(takes_whole(*s, doc(g))) << format << " " << g;
    for (const char* b : bad) EXPECT_FALSE(takes_whole(*s, doc(b))) << format << " " << b;
  }
}

// Random schemas (unions of alternatives with shared prefixes, $refs that may recur): every
// conforming document (compact or indented) is taken whole, and whatever a mutated one is taken
// whole as must conform and parse.
TEST(SchemaPrefix, AgreesWithTheReferenceOnRandomSchemas) {
  std::mt19937 rng(5);
  const std::string alphabet = "{}[]\":,.-0123456789eptrufalsn \nrdxp";
  int conforming = 0, mutated_whole = 0, loops = 0;
  for (int n = 0; n < 600; ++n) {
    Json defs = Json::object();
    Json schema = random_schema(rng, 1, defs);
    if (schema.value("type", Json()) != "object") schema = object_schema({{"v", schema}}, {"v"});
    if (!defs.empty()) schema["$defs"] = defs;
    auto compiled_schema = JsonSchema::compile(schema);
    if (!compiled_schema.ok()) {  // a $ref or anyOf that comes back to itself before any byte
      const std::string why = compiled_schema.status().message();
      ASSERT_TRUE(why.find("comes back to itself") != std::string::npos || why.find("contains itself") != std::string::npos)
          << why << "\n" << schema.dump();
      ++loops;
      continue;
    }
    const JsonSchema* s = compiled_schema->get();
    for (int k = 0; k < 8; ++k) {
      const Json doc = instance(rng, schema, schema);
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
  EXPECT_GT(conforming, 1500);
  EXPECT_GT(mutated_whole, 30);
  EXPECT_LT(loops, 60);
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
    return test::takes_whole(FramedPrefix<SchemaPrefix>(&before, SchemaPrefix(call->get()), &after), text);
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
  EXPECT_TRUE(test::takes_whole(FramedPrefix<SchemaPrefix>(&none, SchemaPrefix(llama->get()), &none),
                                "{\"name\": \"get_time\", \"parameters\": {\"zone\": \"CET\"}}"));
  // A tool whose parameters use a keyword outside the subset cannot be forced.
  auto bad = JsonSchema::compile_call({{"f", object_schema({{"n", {{"type", "integer"}, {"if", Json::object()}}}}, Json::array())}},
                                      "arguments");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("'if'"), std::string::npos) << bad.status().message();
}

// The constraint allows exactly the tokens whose whole text the recogniser takes.
TEST(SchemaConstraint, MaskMatchesFeedingEveryToken) {
  std::mt19937 rng(9);
  std::vector<std::string> texts;
  for (int b = 0; b < 256; ++b) texts.push_back(std::string(1, char(b)));
  const std::string alphabet = "{}[]\":,.-+eE0123456789truefalsn \n\tagescorednmx";
  const std::vector<std::string> pieces = {"\xc3\xa9", "\xe6\x97\xa5", "\xe6", "\x97\xa5", "\xa9"};  // whole and partial UTF-8
  for (int n = 0; n < 20000; ++n) {
    std::string t;
    for (int k = int(1 + rng() % 8); k > 0; --k) t += rng() % 10 ? std::string(1, alphabet[rng() % alphabet.size()]) : pieces[rng() % 5];
    texts.push_back(t);
  }
  texts.push_back("\"name\"");
  texts.push_back("\"age\":");
  auto vocab = std::make_shared<const TokenVocab>(texts);
  const Json plain = object_schema({{"name", {{"type", "string"}}}, {"age", {{"type", "integer"}}},
                                    {"tags", {{"type", "array"}, {"items", {{"enum", {"red", 1, 12}}}}}}},
                                   {"name", "tags"});
  // Readings that stay open together: two string alternatives (one bounded), objects alike up to a key.
  const Json unions = object_schema(
      {{"name", {{"anyOf", {{{"type", "string"}}, {{"type", "string"}, {"maxLength", 2}}, {{"type", "integer"}}}}}},
       {"tags", {{"type", "array"},
                 {"items", {{"anyOf", {object_schema({{"a", {{"type", "integer"}}}, {"b", {{"type", "string"}}}}, {"a", "b"}),
                                       object_schema({{"a", {{"type", "number"}}}, {"c", {{"type", "boolean"}}}}, {"a"})}}}}}}},
      {"name", "tags"});
  const Json patterned = object_schema({{"code", {{"type", "string"}, {"pattern", "^[a-e]+\\d?$"}}}, {"when", {{"type", "string"}, {"format", "date"}}}},
                                       {"code", "when"});
  const std::vector<std::pair<Json, std::string>> cases = {
      {plain, "{\"name\": \"x\\\"y\xc3\xa9\", \"age\": -12, \"tags\": [12, \"red\", 1]}"},
      {unions, "{\"name\": \"x\xe6\x97\xa5z\", \"tags\": [{\"a\": 1, \"b\": \"q\"}, {\"a\": 1.5}, {\"a\": 2, \"c\": true}]}"},
      {patterned, "{\"code\": \"dea7\", \"when\": \"2024-12-05\"}"},
      {object_schema({{"meta", {{"type", "object"}}}}, {"meta"}), "{\"meta\": {\"name\": [1, \"x\", null, {}], \"age\": true}}"}};
  for (const auto& [schema, doc] : cases) {
    auto s = compiled(schema);
    ASSERT_TRUE(s);
    SchemaConstraint c(vocab, SchemaPrefix(s.get()), {}, s);
    test::expect_mask_matches_feeding(c, SchemaPrefix(s.get()), texts, doc);
  }
}

}  // namespace
}  // namespace zinc::engine
