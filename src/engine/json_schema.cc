#include "engine/json_schema.h"

#include <algorithm>
#include <set>

namespace zinc::engine {

namespace {

using Json = nlohmann::ordered_json;

const std::set<std::string> kAnnotations = {"title", "description", "default", "examples", "$schema", "$id", "$comment", "strict"};
const std::set<std::string> kKeywords = {"type", "enum", "const", "properties", "required", "additionalProperties",
                                         "items", "minItems", "maxItems"};


Result<uint32_t> count_of(const Json& s, const char* key, uint32_t absent, const std::string& where) {
  auto it = s.find(key);
  if (it == s.end()) return absent;
  if (!it->is_number_integer() || it->get<int64_t>() < 0 || it->get<uint64_t>() > UINT32_MAX)
    return error("%s.%s must be a non-negative integer", where.c_str(), key);
  return uint32_t(it->get<uint64_t>());
}

}  // namespace

Result<std::shared_ptr<const JsonSchema>> JsonSchema::compile(const Json& schema) {
  auto s = std::make_shared<JsonSchema>();
  if (!schema.is_object() || schema.value("type", Json()) != "object")
    return error("the schema's top level must be {\"type\": \"object\", ...}");
  ZINC_ASSIGN_OR_RETURN(int root, s->add(schema, 0, "schema"));
  (void)root;  // 0
  return std::shared_ptr<const JsonSchema>(std::move(s));
}

Result<std::shared_ptr<const JsonSchema>> JsonSchema::compile_call(const std::vector<Tool>& tools, const std::string& args_key) {
  if (tools.empty() || tools.size() > size_t(kMaxChoices)) return error("a call needs 1 to %d tools", kMaxChoices);
  auto s = std::make_shared<JsonSchema>();
  s->nodes_.emplace_back();  // the call object, filled in below
  Node call;
  call.kind = Kind::kObject;
  Node names;
  names.kind = Kind::kLiterals;
  Property args;
  args.key = Json(args_key).dump();
  args.required = true;
  for (const Tool& t : tools) {
    names.literals.push_back(Json(t.name).dump());
    const Json params = t.parameters.is_null() ? Json{{"type", "object"}} : t.parameters;
    if (!params.is_object() || params.value("type", Json()) != "object")
      return error("tool '%s': its parameters must be {\"type\": \"object\", ...}", t.name.c_str());
    ZINC_ASSIGN_OR_RETURN(int node, s->add(params, 1, "tool '" + t.name + "' parameters"));
    args.by_choice.push_back(node);
  }
  s->nodes_.push_back(std::move(names));
  call.properties.push_back(Property{Json("name").dump(), int(s->nodes_.size()) - 1, true, {}});
  call.properties.push_back(std::move(args));
  s->nodes_[0] = std::move(call);
  return std::shared_ptr<const JsonSchema>(std::move(s));
}

Result<int> JsonSchema::add(const Json& s, int depth, const std::string& where) {
  if (!s.is_object()) return error("%s must be a schema object", where.c_str());
  if (depth > kMaxDepth) return error("%s: schemas nest at most %d objects and arrays deep", where.c_str(), kMaxDepth);
  if (int(nodes_.size()) >= kMaxNodes) return error("the schema has more than %d parts", kMaxNodes);
  for (const auto& [key, value] : s.items())
    if (!kKeywords.count(key) && !kAnnotations.count(key))
      return error("%s: '%s' is not supported (zinc holds output to type, enum, const, properties, required, items, "
                   "minItems and maxItems)", where.c_str(), key.c_str());
  const int index = int(nodes_.size());
  nodes_.emplace_back();
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
    Json type = s.value("type", Json());
    if (type.is_array() && type.size() == 2 && type[1] == "null" && type[0].is_string() && type[0] != "null") {
      n.nullable = true;
      type = type[0];
    }
    if (!type.is_string())
      return error("%s needs a 'type' (one of string, number, integer, boolean, null, object, array, or [type, \"null\"]), "
                   "an 'enum' or a 'const'", where.c_str());
    const std::string t = type.get<std::string>();
    if (t == "string") {
      n.kind = Kind::kString;
    } else if (t == "number") {
      n.kind = Kind::kNumber;
    } else if (t == "integer") {
      n.kind = Kind::kInteger;
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
        ZINC_ASSIGN_OR_RETURN(p.node, add(sub, depth + 1, where + ".properties." + name));
        n.properties.push_back(std::move(p));
      }
    } else if (t == "array") {
      n.kind = Kind::kArray;
      auto items = s.find("items");
      if (items == s.end()) return error("%s: arrays need 'items'", where.c_str());
      ZINC_ASSIGN_OR_RETURN(n.items, add(*items, depth + 1, where + ".items"));
      ZINC_ASSIGN_OR_RETURN(n.min_items, count_of(s, "minItems", 0, where));
      ZINC_ASSIGN_OR_RETURN(n.max_items, count_of(s, "maxItems", UINT32_MAX, where));
      if (n.min_items > n.max_items) return error("%s: minItems is above maxItems", where.c_str());
    } else {
      return error("%s: type '%s' is not one of string, number, integer, boolean, null, object, array", where.c_str(), t.c_str());
    }
  }
  nodes_[size_t(index)] = std::move(n);
  return index;
}

SchemaPrefix::SchemaPrefix(const JsonSchema* schema) : schema_(schema) { push(0); }

SchemaPrefix& SchemaPrefix::operator=(const SchemaPrefix& o) {
  schema_ = o.schema_;
  depth_ = o.depth_;
  done_ = o.done_;
  space_ = o.space_;
  std::copy(o.frames_.begin(), o.frames_.begin() + depth_, frames_.begin());
  return *this;
}

void SchemaPrefix::push(int node) {
  Frame& f = frames_[depth_++];
  f = Frame();
  f.node = uint16_t(node);
}

bool SchemaPrefix::in_free_string() const {
  return depth_ > 0 && frames_[depth_ - 1].phase == Phase::kString && frames_[depth_ - 1].string.free();
}

// Where whitespace may come: between the tokens of an object or array, and before a value other
// than the top one.
bool SchemaPrefix::structural(const Frame& f) const {
  switch (f.phase) {
    case Phase::kStart: return depth_ > 1;
    case Phase::kObjOpen: case Phase::kColon: case Phase::kObjNext: case Phase::kObjComma:
    case Phase::kArrOpen: case Phase::kArrNext: case Phase::kArrComma:
      return true;
    default:
      return false;
  }
}

// The properties whose key may come next: from `next` up to the first required one.
uint64_t SchemaPrefix::allowed_keys(const Frame& f) const {
  const auto& props = schema_->node(f.node).properties;
  uint64_t mask = 0;
  for (size_t i = f.next; i < props.size(); ++i) {
    mask |= uint64_t(1) << i;
    if (props[i].required) break;
  }
  return mask;
}

bool SchemaPrefix::required_left(const Frame& f) const {
  const auto& props = schema_->node(f.node).properties;
  for (size_t i = f.next; i < props.size(); ++i)
    if (props[i].required) return true;
  return false;
}

SchemaPrefix::Step SchemaPrefix::end_value() {
  const uint8_t choice = frames_[depth_ - 1].choice;
  --depth_;
  if (depth_ == 0) {
    done_ = true;
    return Step::kOk;
  }
  Frame& parent = frames_[depth_ - 1];
  if (parent.phase == Phase::kObjValue && parent.next == 1) parent.choice = choice;  // what the first property took
  parent.phase = parent.phase == Phase::kObjValue ? Phase::kObjNext : Phase::kArrNext;
  return Step::kOk;
}

SchemaPrefix::Step SchemaPrefix::start(Frame& f, uint8_t c) {
  const JsonSchema::Node& n = schema_->node(f.node);
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
      return Step::kOk;
    case JsonSchema::Kind::kLiterals: {
      f.phase = Phase::kLiteral;
      f.pos = 0;
      f.cand = n.literals.size() >= 64 ? ~uint64_t(0) : (uint64_t(1) << n.literals.size()) - 1;
      return literal(f, c);
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
  }
  return Step::kFail;
}

SchemaPrefix::Step SchemaPrefix::literal(Frame& f, uint8_t c) {
  static const std::vector<std::string> kNull = {"null"};
  const std::vector<std::string>& lits = f.null_literal ? kNull : schema_->node(f.node).literals;
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

SchemaPrefix::Step SchemaPrefix::step(uint8_t c) {
  if (done_ || depth_ == 0) return Step::kFail;
  Frame& f = frames_[depth_ - 1];
  if (structural(f)) {
    if (json_lex::is_space(c)) return space_.take(c) ? Step::kOk : Step::kFail;
    space_.reset();
  }
  const JsonSchema::Node& n = schema_->node(f.node);
  switch (f.phase) {
    case Phase::kStart:
      return start(f, c);
    case Phase::kString: {
      const json_lex::Step s = f.string.step(c);
      if (s == json_lex::Step::kEnded) return end_value();
      return s == json_lex::Step::kTaken ? Step::kOk : Step::kFail;
    }
    case Phase::kNumber: {
      const json_lex::Step s = f.number.step(c, n.kind == JsonSchema::Kind::kInteger);
      if (s != json_lex::Step::kEnded) return s == json_lex::Step::kTaken ? Step::kOk : Step::kFail;
      end_value();  // a whole number ends before c
      return Step::kAgain;
    }
    case Phase::kLiteral:
      return literal(f, c);
    case Phase::kObjOpen:
    case Phase::kObjComma:
      if (c == '}' && f.phase == Phase::kObjOpen) return required_left(f) ? Step::kFail : end_value();
      if (c != '"') return Step::kFail;
      f.cand = allowed_keys(f);
      if (f.cand == 0) return Step::kFail;
      f.phase = Phase::kKey;
      f.pos = 1;
      return Step::kOk;
    case Phase::kKey: {
      uint64_t next = 0;
      for (size_t i = 0; i < n.properties.size(); ++i)
        if ((f.cand >> i & 1u) && f.pos < n.properties[i].key.size() && uint8_t(n.properties[i].key[f.pos]) == c)
          next |= uint64_t(1) << i;
      if (next == 0) return Step::kFail;
      f.cand = next;
      ++f.pos;
      for (size_t i = 0; i < n.properties.size(); ++i)
        if ((next >> i & 1u) && n.properties[i].key.size() == f.pos) {  // a whole key (quoted: no other continues it)
          f.next = uint16_t(i + 1);
          f.phase = Phase::kColon;
        }
      return Step::kOk;
    }
    case Phase::kColon:
      if (c != ':') return Step::kFail;
      f.phase = Phase::kObjValue;
      {
        const JsonSchema::Property& prop = n.properties[f.next - 1];
        push(prop.by_choice.empty() ? prop.node : prop.by_choice[f.choice]);
      }
      return Step::kOk;
    case Phase::kObjNext:
      if (c == '}') return required_left(f) ? Step::kFail : end_value();
      if (c != ',' || allowed_keys(f) == 0) return Step::kFail;
      f.phase = Phase::kObjComma;
      return Step::kOk;
    case Phase::kArrOpen:
    case Phase::kArrComma:
      if (c == ']' && f.phase == Phase::kArrOpen) return n.min_items == 0 ? end_value() : Step::kFail;
      if (f.count >= n.max_items) return Step::kFail;
      ++f.count;
      f.phase = Phase::kArrValue;
      push(n.items);
      return Step::kAgain;  // c is the item's first byte
    case Phase::kArrNext:
      if (c == ']') return f.count >= n.min_items ? end_value() : Step::kFail;
      if (c != ',' || f.count >= n.max_items) return Step::kFail;
      f.phase = Phase::kArrComma;
      return Step::kOk;
    case Phase::kObjValue:
    case Phase::kArrValue:
      return Step::kFail;  // a child frame is on top while these wait
  }
  return Step::kFail;
}

bool SchemaPrefix::feed(uint8_t c) {
  for (int guard = 0; guard < 2 * JsonSchema::kMaxDepth + 4; ++guard) {
    const Step s = step(c);
    if (s != Step::kAgain) return s == Step::kOk;
  }
  return false;
}

}  // namespace zinc::engine
