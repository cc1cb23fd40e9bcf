#include "engine/json_schema.h"

#include <algorithm>
#include <functional>
#include <limits>
#include <map>
#include <set>

namespace zinc::engine {

namespace {

using Json = nlohmann::ordered_json;

const std::set<std::string> kAnnotations = {"title", "description", "default", "examples", "$schema", "$id",
                                            "$comment", "strict", "$defs", "definitions"};
const std::set<std::string> kKeywords = {"type", "enum", "const", "properties", "required", "additionalProperties",
                                         "items", "minItems", "maxItems", "minLength", "maxLength", "pattern", "format",
                                         "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf", "anyOf",
                                         "oneOf", "allOf", "$ref"};
constexpr const char* kSubset =
    "type, enum, const, properties, required, items, minItems, maxItems, minLength, maxLength, pattern, format, "
    "minimum, maximum, exclusiveMinimum, exclusiveMaximum, multipleOf (of integers), anyOf, oneOf, allOf and $ref";

// The formats held to, as patterns (RFC 3339 dates and times, RFC 4122 UUIDs, RFC 5321 addresses
// without quoted local parts or address literals, RFC 1123 host names).
const std::map<std::string, std::string> kFormats = {
    {"date", R"(^\d{4}-(0[1-9]|1[0-2])-(0[1-9]|[12]\d|3[01])$)"},
    {"time", R"(^([01]\d|2[0-3]):[0-5]\d:([0-5]\d|60)(\.\d+)?(Z|[+-]([01]\d|2[0-3]):[0-5]\d)$)"},
    {"date-time",
     R"(^\d{4}-(0[1-9]|1[0-2])-(0[1-9]|[12]\d|3[01])T([01]\d|2[0-3]):[0-5]\d:([0-5]\d|60)(\.\d+)?(Z|[+-]([01]\d|2[0-3]):[0-5]\d)$)"},
    {"uuid", R"(^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$)"},
    {"email",
     R"(^[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+(\.[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+)*@[A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])?(\.[A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])?)+$)"},
    {"ipv4", R"(^((25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)\.){3}(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)$)"},
    {"hostname", R"(^[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?(\.[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*$)"},
};

Result<uint32_t> count_of(const Json& s, const char* key, uint32_t absent, const std::string& where) {
  auto it = s.find(key);
  if (it == s.end()) return absent;
  if (!it->is_number_integer() || it->get<int64_t>() < 0 || it->get<uint64_t>() > UINT32_MAX)
    return error("%s.%s must be a non-negative integer", where.c_str(), key);
  return uint32_t(it->get<uint64_t>());
}

// minimum / maximum and their exclusive forms (numbers, or draft 4's booleans on minimum / maximum),
// and an integer's multipleOf.
Result<NumberBounds> bounds_of(const Json& s, bool integer, const std::string& where) {
  NumberBounds b;
  if (auto it = s.find("multipleOf"); it != s.end()) {
    if (!integer) return error("%s: multipleOf is held only on integers, not numbers", where.c_str());
    const double m = it->is_number() ? it->get<double>() : 0;
    if (!(m >= 1 && m <= 9007199254740992.0 && std::floor(m) == m))
      return error("%s.multipleOf must be a positive integer (at most 2^53)", where.c_str());
    b.multiple = m;
  }
  for (const char* key : {"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"}) {
    auto it = s.find(key);
    if (it == s.end()) continue;
    const std::string k = key;
    const bool lower = k == "minimum" || k == "exclusiveMinimum", exclusive = k.rfind("exclusive", 0) == 0;
    if (it->is_boolean()) {  // draft 4: the plain bound is exclusive
      if (!exclusive) return error("%s.%s must be a number", where.c_str(), key);
      (lower ? b.lo_open : b.hi_open) = it->get<bool>();
      continue;
    }
    if (!it->is_number()) return error("%s.%s must be a number", where.c_str(), key);
    const long double v = it->get<double>();
    if (lower && (v > b.lo || (v == b.lo && exclusive))) {
      b.lo = v;
      b.lo_open = exclusive;
    } else if (!lower && (v < b.hi || (v == b.hi && exclusive))) {
      b.hi = v;
      b.hi_open = exclusive;
    }
  }
  const long double inf = std::numeric_limits<long double>::infinity();
  const bool empty = integer ? !b.holds_integer_in(-inf, inf) : b.lo > b.hi || (b.lo == b.hi && (b.lo_open || b.hi_open));
  if (empty)
    return error("%s: no %s is within its minimum and maximum", where.c_str(),
                 b.multiple > 0 ? "multiple of its multipleOf" : integer ? "integer" : "number");
  return b;
}

// The first keyword of `s` other than `keyword` and the annotations, or "".
std::string beside(const Json& s, const std::string& keyword) {
  for (const auto& [key, value] : s.items())
    if (key != keyword && !kAnnotations.count(key)) return key;
  return "";
}

// An allOf member with its $refs followed (to their targets in `root`) while nothing but
// annotations stands beside them.
Result<Json> follow_refs(Json m, const Json& root, const std::string& where) {
  for (int hops = 0; m.is_object() && m.contains("$ref") && beside(m, "$ref").empty(); ++hops) {
    const Json& ref = m["$ref"];
    if (hops == 32 || !ref.is_string() || ref.get<std::string>().rfind('#', 0) != 0)
      return error("%s: an allOf member's $ref must name a schema in the document", where.c_str());
    try {
      m = root.at(Json::json_pointer(ref.get<std::string>().substr(1)));
    } catch (const Json::exception&) {
      return error("%s: $ref '%s' names nothing in the schema", where.c_str(), ref.get<std::string>().c_str());
    }
  }
  if (!m.is_object()) return error("%s: allOf members must be schema objects", where.c_str());
  return m;
}

bool is_lower_bound(const std::string& k) {
  return k == "minimum" || k == "exclusiveMinimum" || k == "minLength" || k == "minItems";
}
bool is_upper_bound(const std::string& k) {
  return k == "maximum" || k == "exclusiveMaximum" || k == "maxLength" || k == "maxItems";
}

// Adds member `m`'s keywords to the merged schema `acc`: required lists joined, properties in
// both merged as an allOf of the two, the tighter of two bounds, the enum values both allow.
Status merge_member(Json& acc, const Json& m, const std::string& where) {
  for (const auto& [key, value] : m.items()) {
    if (kAnnotations.count(key)) continue;
    if (key == "anyOf" || key == "oneOf" || key == "$ref")
      return error("%s: an allOf member with '%s' beside other keywords is not supported", where.c_str(), key.c_str());
    if (!acc.contains(key) || acc[key] == value) {
      acc[key] = value;
      continue;
    }
    Json& have = acc[key];
    if (key == "required" && have.is_array() && value.is_array()) {
      for (const auto& r : value)
        if (std::find(have.begin(), have.end(), r) == have.end()) have.push_back(r);
    } else if (key == "properties" && have.is_object() && value.is_object()) {
      for (const auto& [name, sub] : value.items()) {
        if (!have.contains(name) || have[name] == sub) have[name] = sub;
        else have[name] = Json{{"allOf", Json::array({have[name], sub})}};
      }
    } else if ((is_lower_bound(key) || is_upper_bound(key)) && have.is_number() && value.is_number()) {
      const bool take = is_lower_bound(key) ? value.get<double>() > have.get<double>() : value.get<double>() < have.get<double>();
      if (take) have = value;
    } else if (key == "enum" && have.is_array() && value.is_array()) {
      Json both = Json::array();
      for (const auto& v : have)
        if (std::find(value.begin(), value.end(), v) != value.end()) both.push_back(v);
      if (both.empty()) return error("%s: the allOf members' enums share no value", where.c_str());
      have = std::move(both);
    } else if (key == "type" && have.is_string() && value.is_string() &&
               ((have == "integer" && value == "number") || (have == "number" && value == "integer"))) {
      have = "integer";
    } else if (key == "additionalProperties" && (have.is_boolean() || value.is_boolean())) {
      if (have == false || value == false) have = false;
      else if (have == true) have = value;
    } else {
      return error("%s: the allOf members disagree on '%s' (%s against %s)", where.c_str(), key.c_str(), have.dump().c_str(),
                   value.dump().c_str());
    }
  }
  return ok_status();
}

// The one schema an allOf (with the keywords beside it) stands for, read as llama.cpp's
// json-schema-to-grammar reads it: the members' keywords merged, so an object takes every
// member's properties (and additionalProperties false from any member keeps out only keys
// no member lists).
Result<Json> merge_all_of(const Json& s, const Json& root, const std::string& where, int depth = 0) {
  if (depth > 8) return error("%s: allOf nests more than 8 deep", where.c_str());
  Json acc = Json::object();
  Json rest = s;
  rest.erase("allOf");
  std::vector<Json> members;
  for (const Json& m : s["allOf"])
    if (!m.is_object() || !beside(m, "").empty()) members.push_back(m);
  if (!beside(rest, "").empty()) members.push_back(std::move(rest));
  if (members.size() == 1) return members[0];  // read as it is: $refs and anyOf included
  for (size_t i = 0; i < members.size(); ++i) {
    const std::string at = where + ".allOf[" + std::to_string(i) + "]";
    ZINC_ASSIGN_OR_RETURN(Json m, follow_refs(std::move(members[i]), root, at));
    if (m.contains("allOf")) {
      if (!m["allOf"].is_array()) return error("%s.allOf must be an array of schemas", at.c_str());
      ZINC_ASSIGN_OR_RETURN(m, merge_all_of(m, root, at, depth + 1));
    }
    ZINC_RETURN_IF_ERROR(merge_member(acc, m, at));
  }
  return acc;
}

}  // namespace

struct JsonSchema::Refs {
  const Json* root = nullptr;       // the document "#" names
  std::map<std::string, int> made;  // each $ref followed, and its node
  std::set<int> pending;            // nodes of $refs still being made
};

Result<std::shared_ptr<const JsonSchema>> JsonSchema::compile(const Json& schema) {
  auto s = std::make_shared<JsonSchema>();
  Refs refs{&schema, {}, {}};
  ZINC_ASSIGN_OR_RETURN(s->root_, s->add(schema, 0, "schema", refs));
  if (s->nodes_[size_t(s->root_)].kind != Kind::kObject)
    return error("the schema's top level must be {\"type\": \"object\", ...}");
  ZINC_RETURN_IF_ERROR(s->check_unions());
  return std::shared_ptr<const JsonSchema>(std::move(s));
}

Result<std::shared_ptr<const JsonSchema>> JsonSchema::compile_call(const std::vector<Tool>& tools, const std::string& args_key) {
  if (tools.empty() || tools.size() > size_t(kMaxChoices)) return error("a call needs 1 to %d tools", kMaxChoices);
  auto s = std::make_shared<JsonSchema>();
  s->root_ = s->reserve();  // the call object, filled in below
  Node call;
  call.kind = Kind::kObject;
  Node names;
  names.kind = Kind::kLiterals;
  Property args;
  args.key = Json(args_key).dump();
  args.required = true;
  for (const Tool& t : tools) {
    names.literals.push_back(Json(t.name).dump());
    const Json params = t.parameters.is_null() ? Json{{"type", "object"}, {"additionalProperties", false}} : t.parameters;
    const std::string where = "tool '" + t.name + "' parameters";
    Refs refs{&params, {}, {}};
    ZINC_ASSIGN_OR_RETURN(int node, s->add(params, 1, where, refs));
    if (s->nodes_[size_t(node)].kind != Kind::kObject)
      return error("tool '%s': its parameters must be {\"type\": \"object\", ...}", t.name.c_str());
    args.by_choice.push_back(node);
  }
  s->nodes_.push_back(std::move(names));
  call.properties.push_back(Property{Json("name").dump(), int(s->nodes_.size()) - 1, true, {}});
  call.properties.push_back(std::move(args));
  s->nodes_[size_t(s->root_)] = std::move(call);
  ZINC_RETURN_IF_ERROR(s->check_unions());
  return std::shared_ptr<const JsonSchema>(std::move(s));
}

int JsonSchema::reserve() {
  nodes_.emplace_back();
  return int(nodes_.size()) - 1;
}

Result<int> JsonSchema::add(const Json& s, int depth, const std::string& where, Refs& refs) {
  if (!s.is_object()) return error("%s must be a schema object", where.c_str());
  if (depth > kMaxDepth) return error("%s: schemas nest at most %d objects and arrays deep", where.c_str(), kMaxDepth);
  if (int(nodes_.size()) >= kMaxNodes) return error("the schema has more than %d parts", kMaxNodes);
  for (const auto& [key, value] : s.items())
    if (!kKeywords.count(key) && !kAnnotations.count(key))
      return error("%s: '%s' is not supported (zinc holds output to %s)", where.c_str(), key.c_str(), kSubset);
  // The keywords that stand for a whole schema.
  if (auto all = s.find("allOf"); all != s.end() && !s.contains("$ref")) {
    if (!all->is_array() || all->empty() || all->size() > size_t(kMaxChoices))
      return error("%s.allOf must be an array of 1 to %d schemas", where.c_str(), kMaxChoices);
    ZINC_ASSIGN_OR_RETURN(const Json merged, merge_all_of(s, *refs.root, where));
    return add(merged, depth, where + ".allOf", refs);
  }
  for (const std::string keyword : {"$ref", "anyOf", "oneOf"}) {
    auto it = s.find(keyword);
    if (it == s.end()) continue;
    if (const std::string other = beside(s, keyword); !other.empty())
      return error("%s: '%s' beside '%s' is not supported", where.c_str(), other.c_str(), keyword.c_str());
    if (keyword == "$ref") {
      if (!it->is_string() || it->get<std::string>().empty()) return error("%s.$ref must be a reference", where.c_str());
      return add_ref(it->get<std::string>(), depth, where, refs);
    }
    if (!it->is_array() || it->empty() || it->size() > size_t(kMaxChoices))
      return error("%s.%s must be an array of 1 to %d schemas", where.c_str(), keyword.c_str(), kMaxChoices);
    return add_union(*it, depth, where + "." + keyword, refs);
  }
  Json type = s.value("type", Json());
  if (type.is_array() && type.size() == 1) type = type[0];
  if (type.is_array() && !(type.size() == 2 && type[1] == "null" && type[0].is_string() && type[0] != "null")) {
    Json alternatives = Json::array();  // one schema a type, with the same other keywords
    for (const auto& t : type) {
      if (!t.is_string()) return error("%s.type must name types", where.c_str());
      Json alt = s;
      alt["type"] = t;
      alternatives.push_back(std::move(alt));
    }
    return add_union(alternatives, depth, where + ".type", refs);
  }
  const int index = reserve();
  Node n;
  auto literals_of = [&](const Json& values) -> Status {
    if (values.empty() || values.size() > size_t(kMaxChoices))
      return error("%s.enum must have 1 to %d values", where.c_str(), kMaxChoices);
    for (const auto& v : values) {
      n.literals.push_back(v.dump());
      if (n.literals.back().size() > size_t(kMaxText))
        return error("%s: an enum or const value is longer than %d bytes", where.c_str(), kMaxText);
    }
    n.kind = Kind::kLiterals;
    return ok_status();
  };
  if (auto c = s.find("const"); c != s.end()) {
    ZINC_RETURN_IF_ERROR(literals_of(Json::array({*c})));
  } else if (auto e = s.find("enum"); e != s.end()) {
    if (!e->is_array()) return error("%s.enum must be an array", where.c_str());
    ZINC_RETURN_IF_ERROR(literals_of(*e));
  } else {
    if (type.is_array()) {  // [T, "null"]
      n.nullable = true;
      type = type[0];
    }
    if (type.is_null() && (s.contains("properties") || s.contains("additionalProperties"))) type = "object";
    if (type.is_null() && beside(s, "") .empty()) {  // {}: any value
      nodes_.pop_back();
      return any_value();
    }
    if (!type.is_string())
      return error("%s needs a 'type' (string, number, integer, boolean, null, object, array, or an array of them), "
                   "an 'enum', a 'const', an 'anyOf' or a '$ref'", where.c_str());
    const std::string t = type.get<std::string>();
    if (t == "string") {
      n.kind = Kind::kString;
      ZINC_ASSIGN_OR_RETURN(n.min, count_of(s, "minLength", 0, where));
      ZINC_ASSIGN_OR_RETURN(n.max, count_of(s, "maxLength", UINT32_MAX, where));
      if (n.min > n.max) return error("%s: minLength is above maxLength", where.c_str());
      ZINC_ASSIGN_OR_RETURN(n.pattern, add_pattern(s, where));
    } else if (t == "number" || t == "integer") {
      n.kind = t == "number" ? Kind::kNumber : Kind::kInteger;
      ZINC_ASSIGN_OR_RETURN(n.bounds, bounds_of(s, n.kind == Kind::kInteger, where));
    } else if (t == "boolean") {
      n.kind = Kind::kLiterals;
      n.literals = {"true", "false"};
    } else if (t == "null") {
      n.kind = Kind::kLiterals;
      n.literals = {"null"};
    } else if (t == "object") {
      n.kind = Kind::kObject;
      const Json props = s.value("properties", Json::object());
      if (!props.is_object()) return error("%s.properties must be an object", where.c_str());
      if (props.size() > size_t(kMaxChoices)) return error("%s has more than %d properties", where.c_str(), kMaxChoices);
      const Json required = s.value("required", Json::array());
      if (!required.is_array()) return error("%s.required must be an array of names", where.c_str());
      for (const auto& r : required)
        if (!r.is_string() || !props.contains(r.get<std::string>()))
          return error("%s.required names %s, which is not in its properties", where.c_str(), r.dump().c_str());
      for (const auto& [name, sub] : props.items()) {
        Property p;
        p.key = Json(name).dump();
        if (p.key.size() > size_t(kMaxText)) return error("%s: a property name is longer than %d bytes", where.c_str(), kMaxText);
        p.required = std::find(required.begin(), required.end(), Json(name)) != required.end();
        ZINC_ASSIGN_OR_RETURN(p.node, add(sub, depth + 1, where + ".properties." + name, refs));
        n.properties.push_back(std::move(p));
      }
      const Json others = s.value("additionalProperties", Json());
      if (others.is_object()) {
        ZINC_ASSIGN_OR_RETURN(n.extra, add(others, depth + 1, where + ".additionalProperties", refs));
      } else if (others == true || (others.is_null() && props.empty())) {
        n.extra = any_value();
      } else if (!others.is_null() && others != false) {
        return error("%s.additionalProperties must be true, false or a schema", where.c_str());
      }
    } else if (t == "array") {
      n.kind = Kind::kArray;
      auto items = s.find("items");
      if (items == s.end()) return error("%s: arrays need 'items'", where.c_str());
      ZINC_ASSIGN_OR_RETURN(n.items, add(*items, depth + 1, where + ".items", refs));
      ZINC_ASSIGN_OR_RETURN(n.min, count_of(s, "minItems", 0, where));
      ZINC_ASSIGN_OR_RETURN(n.max, count_of(s, "maxItems", UINT32_MAX, where));
      if (n.min > n.max) return error("%s: minItems is above maxItems", where.c_str());
    } else {
      return error("%s: type '%s' is not one of string, number, integer, boolean, null, object, array", where.c_str(), t.c_str());
    }
  }
  nodes_[size_t(index)] = std::move(n);
  return index;
}

// A string's "pattern" or "format" as a Regex; -1 for neither.
Result<int> JsonSchema::add_pattern(const Json& s, const std::string& where) {
  const auto pattern = s.find("pattern"), format = s.find("format");
  if (pattern == s.end() && format == s.end()) return -1;
  if (pattern != s.end() && format != s.end()) return error("%s: 'pattern' and 'format' together are not supported", where.c_str());
  std::string source;
  if (pattern != s.end()) {
    if (!pattern->is_string()) return error("%s.pattern must be a string", where.c_str());
    source = pattern->get<std::string>();
  } else {
    const auto known = format->is_string() ? kFormats.find(format->get<std::string>()) : kFormats.end();
    if (known == kFormats.end())
      return error("%s: format %s is not supported (zinc holds output to date, time, date-time, uuid, email, ipv4 and hostname)",
                   where.c_str(), format->dump().c_str());
    source = known->second;
  }
  if (auto known = pattern_of_.find(source); known != pattern_of_.end()) return known->second;
  auto regex = Regex::compile(source, &pattern_budget_);
  if (!regex.ok()) return error("%s: %s", where.c_str(), regex.status().message().c_str());
  patterns_.push_back(std::move(*regex));
  pattern_of_[source] = int(patterns_.size()) - 1;
  return int(patterns_.size()) - 1;
}

int JsonSchema::any_value() {
  if (any_ >= 0) return any_;
  any_ = reserve();
  Node any;
  any.kind = Kind::kUnion;
  for (Kind kind : {Kind::kString, Kind::kNumber, Kind::kLiterals, Kind::kArray, Kind::kObject}) {
    Node n;
    n.kind = kind;
    if (kind == Kind::kLiterals) n.literals = {"true", "false", "null"};
    if (kind == Kind::kArray) n.items = any_;
    if (kind == Kind::kObject) n.extra = any_;
    any.alternatives.push_back(reserve());
    nodes_.back() = std::move(n);
  }
  nodes_[size_t(any_)] = std::move(any);
  return any_;
}

Result<int> JsonSchema::add_ref(const std::string& ref, int depth, const std::string& where, Refs& refs) {
  if (auto it = refs.made.find(ref); it != refs.made.end()) return it->second;
  if (ref[0] != '#') return error("%s: $ref '%s' is outside the schema (only '#...' references are followed)", where.c_str(), ref.c_str());
  const Json* target = nullptr;
  try {
    target = &refs.root->at(Json::json_pointer(ref.substr(1)));
  } catch (const Json::exception&) {
  }
  if (!target) return error("%s: $ref '%s' names nothing in the schema", where.c_str(), ref.c_str());
  if (int(nodes_.size()) >= kMaxNodes) return error("the schema has more than %d parts", kMaxNodes);
  const int index = reserve();
  refs.made[ref] = index;
  refs.pending.insert(index);
  ZINC_ASSIGN_OR_RETURN(int body, add(*target, depth, where + " ($ref " + ref + ")", refs));
  if (refs.pending.count(body)) return error("%s: $ref '%s' comes back to itself with nothing between", where.c_str(), ref.c_str());
  nodes_[size_t(index)] = nodes_[size_t(body)];
  refs.pending.erase(index);
  return index;
}

Result<int> JsonSchema::add_union(const Json& alternatives, int depth, const std::string& where, Refs& refs) {
  if (alternatives.size() == 1) return add(alternatives[0], depth, where + "[0]", refs);
  const int index = reserve();
  Node n;
  n.kind = Kind::kUnion;
  for (size_t i = 0; i < alternatives.size(); ++i) {
    ZINC_ASSIGN_OR_RETURN(int a, add(alternatives[i], depth, where + "[" + std::to_string(i) + "]", refs));
    n.alternatives.push_back(a);
  }
  nodes_[size_t(index)] = std::move(n);
  return index;
}

// A union whose alternatives lead back to it through unions only would never read a byte.
Status JsonSchema::check_unions() const {
  std::vector<uint8_t> mark(nodes_.size(), 0);  // 1: being walked, 2: done
  std::function<bool(int)> cycle = [&](int i) {
    if (nodes_[size_t(i)].kind != Kind::kUnion || mark[size_t(i)] == 2) return false;
    if (mark[size_t(i)] == 1) return true;
    mark[size_t(i)] = 1;
    for (int a : nodes_[size_t(i)].alternatives)
      if (cycle(a)) return true;
    mark[size_t(i)] = 2;
    return false;
  };
  for (size_t i = 0; i < nodes_.size(); ++i)
    if (cycle(int(i))) return error("an anyOf of the schema contains itself with no object or array between");
  return ok_status();
}

SchemaPrefix::SchemaPrefix(const JsonSchema* schema, int node) : schema_(schema), paths_(1) { paths_[0].push(node); }

bool SchemaPrefix::feed(uint8_t c) {
  size_t kept = 0;
  for (size_t i = 0; i < paths_.size(); ++i) {  // paths forked by feed_path join the end, c still to read
    if (!feed_path(i, c)) continue;
    if (kept != i) paths_[kept] = paths_[i];
    ++kept;
  }
  paths_.resize(kept);
  if (kept > 1) merge_equal_paths();
  return kept > 0;
}

bool SchemaPrefix::feed_path(size_t i, uint8_t c) {
  const JsonSchema& schema = *schema_;
  for (int guard = 0; guard < 2 * kMaxFrames + JsonSchema::kMaxNodes; ++guard) {
    if (paths_[i].at_union(schema, c)) {  // one path an alternative
      const std::vector<int>& alternatives = schema.node(paths_[i].top().node).alternatives;
      for (size_t k = 1; k < alternatives.size() && paths_.size() < kMaxPaths; ++k) {
        paths_.push_back(paths_[i]);
        paths_.back().top().node = uint16_t(alternatives[k]);
      }
      paths_[i].top().node = uint16_t(alternatives[0]);
      continue;
    }
    const Step s = paths_[i].step(schema, c);
    if (s != Step::kAgain) return s == Step::kOk;
  }
  return false;
}

void SchemaPrefix::merge_equal_paths() {
  size_t kept = 0;
  for (size_t i = 0; i < paths_.size(); ++i) {
    if (std::find(paths_.begin(), paths_.begin() + kept, paths_[i]) != paths_.begin() + kept) continue;
    if (kept != i) paths_[kept] = paths_[i];
    ++kept;
  }
  paths_.resize(kept);
}

bool SchemaPrefix::complete() const {
  return std::any_of(paths_.begin(), paths_.end(), [](const Path& p) { return p.done(); });
}

bool SchemaPrefix::ends() const {
  return std::any_of(paths_.begin(), paths_.end(), [&](const Path& p) {
    Path q = p;
    if (!q.done()) q.step(*schema_, ' ');  // a value whole before a byte that cannot continue it pops
    return q.done();
  });
}

bool SchemaPrefix::in_free_string() const {
  return !paths_.empty() && std::all_of(paths_.begin(), paths_.end(), [&](const Path& p) { return p.in_free_string(*schema_); });
}

SchemaPrefix::Path& SchemaPrefix::Path::operator=(const Path& o) {
  depth_ = o.depth_;
  done_ = o.done_;
  space_ = o.space_;
  number_ = o.number_;
  std::copy(o.frames_.begin(), o.frames_.begin() + depth_, frames_.begin());
  return *this;
}

bool SchemaPrefix::Path::operator==(const Path& o) const {
  return depth_ == o.depth_ && done_ == o.done_ && space_ == o.space_ && number_ == o.number_ &&
         std::equal(frames_.begin(), frames_.begin() + depth_, o.frames_.begin());
}

bool SchemaPrefix::Path::push(int node) {
  if (depth_ == kMaxFrames) return false;
  Frame& f = frames_[depth_++];
  f = Frame();
  f.node = uint16_t(node);
  return true;
}

bool SchemaPrefix::Path::at_union(const JsonSchema& schema, uint8_t c) const {
  if (depth_ == 0) return false;
  const Frame& f = top();
  return f.phase == Phase::kStart && schema.node(f.node).kind == JsonSchema::Kind::kUnion &&
         !(structural(f) && json_lex::is_space(c));
}

// Plain bytes (no quote, backslash or control byte) of any number may come.
bool SchemaPrefix::Path::in_free_string(const JsonSchema& schema) const {
  if (depth_ == 0 || top().phase != Phase::kString || !top().string.free()) return false;
  const JsonSchema::Node& n = schema.node(top().node);
  return n.max == UINT32_MAX && n.pattern < 0;
}

// Where whitespace may come: between the tokens of an object or array, and before a value other
// than the top one.
bool SchemaPrefix::Path::structural(const Frame& f) const {
  switch (f.phase) {
    case Phase::kStart: return depth_ > 1;
    case Phase::kObjOpen: case Phase::kColon: case Phase::kObjNext: case Phase::kObjComma:
    case Phase::kArrOpen: case Phase::kArrNext: case Phase::kArrComma:
      return true;
    default:
      return false;
  }
}


SchemaPrefix::Step SchemaPrefix::Path::end_value() {
  const uint8_t choice = frames_[depth_ - 1].choice;
  --depth_;
  if (depth_ == 0) {
    done_ = true;
    return Step::kOk;
  }
  Frame& parent = frames_[depth_ - 1];
  if (parent.phase == Phase::kObjValue && parent.next == 1 && !parent.extra) parent.choice = choice;  // what the first property took
  parent.phase = parent.phase == Phase::kObjValue ? Phase::kObjNext : Phase::kArrNext;
  return Step::kOk;
}

SchemaPrefix::Step SchemaPrefix::Path::start(const JsonSchema& schema, Frame& f, uint8_t c) {
  const JsonSchema::Node& n = schema.node(f.node);
  if (n.nullable && c == 'n') {
    f.phase = Phase::kLiteral;
    f.null_literal = true;
    f.pos = 1;
    return Step::kOk;
  }
  switch (n.kind) {
    case JsonSchema::Kind::kString:
      if (c != '"') return Step::kFail;
      f.phase = Phase::kString;
      f.string = json_lex::StringBody();
      return Step::kOk;
    case JsonSchema::Kind::kNumber:
    case JsonSchema::Kind::kInteger:
      if (!f.number.start(c)) return Step::kFail;
      f.phase = Phase::kNumber;
      if (!n.bounds.any()) return Step::kOk;
      number_ = NumberProgress();
      number_.take(c);
      return number_.feasible(n.bounds, n.kind == JsonSchema::Kind::kInteger) ? Step::kOk : Step::kFail;
    case JsonSchema::Kind::kLiterals: {
      f.phase = Phase::kLiteral;
      f.pos = 0;
      f.cand = n.literals.size() >= 64 ? ~uint64_t(0) : (uint64_t(1) << n.literals.size()) - 1;
      return literal(schema, f, c);
    }
    case JsonSchema::Kind::kObject:
      if (c != '{') return Step::kFail;
      f.phase = Phase::kObjOpen;
      f.next = 0;
      return Step::kOk;
    case JsonSchema::Kind::kArray:
      if (c != '[') return Step::kFail;
      f.phase = Phase::kArrOpen;
      f.count = 0;
      return Step::kOk;
    case JsonSchema::Kind::kUnion:
      return Step::kFail;  // chosen before its first byte (SchemaPrefix::feed_path)
  }
  return Step::kFail;
}

SchemaPrefix::Step SchemaPrefix::Path::literal(const JsonSchema& schema, Frame& f, uint8_t c) {
  static const std::vector<std::string> kNull = {"null"};
  const std::vector<std::string>& lits = f.null_literal ? kNull : schema.node(f.node).literals;
  const uint64_t cand = f.null_literal ? 1 : f.cand;
  uint64_t next = 0;
  bool ended = false;  // a candidate is whole before c
  for (size_t i = 0; i < lits.size(); ++i) {
    if (!(cand >> i & 1u)) continue;
    if (lits[i].size() == f.pos) ended = true;
    else if (uint8_t(lits[i][f.pos]) == c) next |= uint64_t(1) << i;
  }
  auto whole_one = [&](uint64_t among) {  // the candidate that is whole at f.pos
    for (size_t i = 0; i < lits.size(); ++i)
      if ((among >> i & 1u) && lits[i].size() == f.pos) return uint8_t(i);
    return uint8_t(0);
  };
  if (next == 0) {
    if (!ended) return Step::kFail;
    f.choice = whole_one(cand);
    end_value();
    return Step::kAgain;
  }
  f.cand = next;
  ++f.pos;
  bool longer = false, whole = false;
  for (size_t i = 0; i < lits.size(); ++i) {
    if (!(next >> i & 1u)) continue;
    if (lits[i].size() == f.pos) whole = true;
    else longer = true;
  }
  if (whole && !longer) {  // nothing can extend it: whole now
    f.choice = whole_one(next);
    end_value();
  }
  return Step::kOk;
}

// A string's byte; minLength and maxLength count code points, an escape as one (a surrogate
// pair as one too), and a pattern reads the code points.
SchemaPrefix::Step SchemaPrefix::Path::string(const JsonSchema& schema, Frame& f, uint8_t c) {
  const JsonSchema::Node& n = schema.node(f.node);
  const bool new_point = f.string.free() && c != '"';
  int32_t unit = -1;
  const json_lex::Step s = f.string.step(c, &unit);
  if (s == json_lex::Step::kEnded) {
    const bool matched = n.pattern < 0 || (f.high == 0 && schema.pattern(n.pattern).accepts(f.dfa));
    return f.count >= n.min && matched ? end_value() : Step::kFail;
  }
  if (s == json_lex::Step::kFail || (new_point && ++f.count > n.max)) return Step::kFail;
  if (unit < 0 || n.pattern < 0) return Step::kOk;
  uint32_t point = uint32_t(unit);
  if (f.high != 0) {  // only the low half of a pair may follow
    if (unit < 0xDC00 || unit > 0xDFFF) return Step::kFail;
    point = 0x10000 + ((uint32_t(f.high) - 0xD800) << 10) + (uint32_t(unit) - 0xDC00);
    f.high = 0;
    --f.count;
  } else if (unit >= 0xD800 && unit <= 0xDBFF) {
    f.high = uint16_t(unit);
    return Step::kOk;
  } else if (unit >= 0xDC00 && unit <= 0xDFFF) {
    return Step::kFail;
  }
  f.dfa = schema.pattern(n.pattern).step(f.dfa, point);
  return f.dfa == Regex::kDead ? Step::kFail : Step::kOk;
}

// A number's byte; bounds are checked on every prefix (and exponents refused) where there are some.
SchemaPrefix::Step SchemaPrefix::Path::number(const JsonSchema& schema, Frame& f, uint8_t c) {
  const JsonSchema::Node& n = schema.node(f.node);
  const bool integer = n.kind == JsonSchema::Kind::kInteger, bounded = n.bounds.any();
  if (bounded && (c == 'e' || c == 'E')) return Step::kFail;
  const json_lex::Step s = f.number.step(c, integer);
  if (s == json_lex::Step::kFail) return Step::kFail;
  if (s == json_lex::Step::kEnded) {  // a whole number ends before c
    if (bounded && !n.bounds.holds(number_.value())) return Step::kFail;
    end_value();
    return Step::kAgain;
  }
  if (!bounded) return Step::kOk;
  number_.take(c);
  return number_.feasible(n.bounds, integer) ? Step::kOk : Step::kFail;
}

SchemaPrefix::Step SchemaPrefix::Path::step(const JsonSchema& schema, uint8_t c) {
  if (done_ || depth_ == 0) return Step::kFail;
  Frame& f = top();
  if (structural(f)) {
    if (json_lex::is_space(c)) return space_.take(c) ? Step::kOk : Step::kFail;
    space_.reset();
  }
  const JsonSchema::Node& n = schema.node(f.node);
  // The properties whose key may come next: from `next` up to the first required one.
  auto allowed_keys = [&] {
    uint64_t mask = 0;
    for (size_t i = f.next; i < n.properties.size(); ++i) {
      mask |= uint64_t(1) << i;
      if (n.properties[i].required) break;
    }
    return mask;
  };
  auto required_left = [&] {
    for (size_t i = f.next; i < n.properties.size(); ++i)
      if (n.properties[i].required) return true;
    return false;
  };
  switch (f.phase) {
    case Phase::kStart:
      return start(schema, f, c);
    case Phase::kString:
      return string(schema, f, c);
    case Phase::kNumber:
      return number(schema, f, c);
    case Phase::kLiteral:
      return literal(schema, f, c);
    case Phase::kObjOpen:
    case Phase::kObjComma:
      if (c == '}' && f.phase == Phase::kObjOpen) return required_left() ? Step::kFail : end_value();
      if (c != '"') return Step::kFail;
      f.cand = allowed_keys();
      f.listed = n.properties.size() >= 64 ? ~uint64_t(0) : (uint64_t(1) << n.properties.size()) - 1;
      f.extra = n.extra >= 0;
      f.string = json_lex::StringBody();
      if (f.cand == 0 && !f.extra) return Step::kFail;
      f.phase = Phase::kKey;
      f.pos = 1;
      return Step::kOk;
    case Phase::kKey: {
      uint64_t next = 0, listed = 0;
      for (size_t i = 0; i < n.properties.size(); ++i)
        if ((f.listed >> i & 1u) && f.pos < n.properties[i].key.size() && uint8_t(n.properties[i].key[f.pos]) == c) {
          listed |= uint64_t(1) << i;
          if (f.cand >> i & 1u) next |= uint64_t(1) << i;
        }
      json_lex::Step other = json_lex::Step::kFail;  // the key read as one of no listed property
      if (f.extra) other = f.string.step(c);
      if (next == 0 && other == json_lex::Step::kFail) return Step::kFail;
      f.cand = next;
      f.listed = listed;
      f.extra = other != json_lex::Step::kFail;
      ++f.pos;
      for (size_t i = 0; i < n.properties.size(); ++i)
        if ((next >> i & 1u) && n.properties[i].key.size() == f.pos) {  // a whole key (quoted: no other continues it)
          f.next = uint16_t(i + 1);
          f.phase = Phase::kColon;
          f.extra = false;
          return Step::kOk;
        }
      if (other == json_lex::Step::kEnded) {  // another key, unless it names a listed property
        for (size_t i = 0; i < n.properties.size(); ++i)
          if ((listed >> i & 1u) && n.properties[i].key.size() == f.pos) return Step::kFail;
        f.phase = Phase::kColon;
      }
      return Step::kOk;
    }
    case Phase::kColon:
      if (c != ':') return Step::kFail;
      f.phase = Phase::kObjValue;
      if (f.extra) return push(n.extra) ? Step::kOk : Step::kFail;
      {
        const JsonSchema::Property& prop = n.properties[f.next - 1];
        return push(prop.by_choice.empty() ? prop.node : prop.by_choice[f.choice]) ? Step::kOk : Step::kFail;
      }
    case Phase::kObjNext:
      if (c == '}') return required_left() ? Step::kFail : end_value();
      if (c != ',' || (allowed_keys() == 0 && n.extra < 0)) return Step::kFail;
      f.phase = Phase::kObjComma;
      return Step::kOk;
    case Phase::kArrOpen:
    case Phase::kArrComma:
      if (c == ']' && f.phase == Phase::kArrOpen) return n.min == 0 ? end_value() : Step::kFail;
      if (f.count >= n.max) return Step::kFail;
      ++f.count;
      f.phase = Phase::kArrValue;
      return push(n.items) ? Step::kAgain : Step::kFail;  // c is the item's first byte
    case Phase::kArrNext:
      if (c == ']') return f.count >= n.min ? end_value() : Step::kFail;
      if (c != ',' || f.count >= n.max) return Step::kFail;
      f.phase = Phase::kArrComma;
      return Step::kOk;
    case Phase::kObjValue:
    case Phase::kArrValue:
      return Step::kFail;  // a child frame is on top while these wait
  }
  return Step::kFail;
}

}  // namespace zinc::engine
