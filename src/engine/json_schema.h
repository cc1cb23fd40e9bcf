// Structured outputs (response_format {"type": "json_schema"}): a JSON Schema compiled into a byte
// recogniser, so that generation can only write a document the schema accepts.
//
// The subset is what OpenAI's strict mode asks schemas to use, read the way llama.cpp's
// json-schema-to-grammar reads it: "type" string, number, integer, boolean, null, object or array,
// or a pair [T, "null"]; "enum" and "const" (any JSON values, written compactly); object
// "properties" written in the order listed, those in "required" always, the others optional, and
// no other keys (additionalProperties is accepted and never used); array "items" with "minItems"
// and "maxItems". Annotations (title, description, default, examples, $schema, $id, $comment,
// strict) are ignored. Any other keyword (pattern, format, anyOf, $ref, minimum, ...) is refused
// by compile(), named in the error, rather than ignored: the output would not be held to it.
// The top level must be an object (as OpenAI requires). Whitespace between tokens as in JsonPrefix
// (json_lex::Spacing).
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/status.h"
#include "engine/json_lex.h"
#include "engine/prefix_constraint.h"

namespace zinc::engine {

class JsonSchema {
 public:
  static constexpr int kMaxDepth = 16;       // nested objects and arrays
  static constexpr int kMaxNodes = 4096;
  static constexpr int kMaxChoices = 64;     // properties of an object, values of an enum
  static constexpr int kMaxText = 4096;      // bytes of a property name or an enum value

  enum class Kind : uint8_t { kString, kNumber, kInteger, kLiterals, kObject, kArray };
  struct Property {
    std::string key;  // the name as a JSON string, quotes included
    int node = -1;
    bool required = false;
    // When not empty, the value's node is by_choice[i], i the enum value the object's first
    // property took (a tool call's arguments follow its name).
    std::vector<int> by_choice;
  };
  struct Node {
    Kind kind = Kind::kString;
    bool nullable = false;              // type [T, "null"]
    std::vector<std::string> literals;  // kLiterals: each value's compact JSON text
    std::vector<Property> properties;   // kObject
    int items = -1;                     // kArray
    uint32_t min_items = 0, max_items = UINT32_MAX;
  };

  static Result<std::shared_ptr<const JsonSchema>> compile(const nlohmann::ordered_json& schema);
  // A tool call: {"name": one of the tools' names, args_key: that tool's parameters schema}.
  struct Tool {
    std::string name;
    nlohmann::ordered_json parameters;  // null: no parameters, {}
  };
  static Result<std::shared_ptr<const JsonSchema>> compile_call(const std::vector<Tool>& tools, const std::string& args_key);
  const Node& node(int i) const { return nodes_[size_t(i)]; }

 private:
  Result<int> add(const nlohmann::ordered_json& s, int depth, const std::string& where);
  std::vector<Node> nodes_;
};

// Reads bytes against a compiled schema (which must outlive it); a copyable value for
// PrefixConstraint.
class SchemaPrefix {
 public:
  SchemaPrefix() = default;
  explicit SchemaPrefix(const JsonSchema* schema);
  SchemaPrefix(const SchemaPrefix& o) { *this = o; }
  SchemaPrefix& operator=(const SchemaPrefix& o);  // copies the frames in use only

  bool feed(uint8_t c);  // false: c cannot continue a document of the schema (the state is then unusable)
  bool complete() const { return done_; }
  bool in_free_string() const;

 private:
  enum class Phase : uint8_t {
    kStart,    // the value's first byte
    kString,
    kNumber,
    kLiteral,  // enum / const / boolean / null, or the null of a nullable node
    kObjOpen, kKey, kColon, kObjValue, kObjNext, kObjComma,  // objects
    kArrOpen, kArrValue, kArrNext, kArrComma,           // arrays
  };
  enum class Step : uint8_t { kFail, kOk, kAgain };  // kAgain: the value ended before c; the parent reads it
  struct Frame {
    uint64_t cand = 0;   // kKey: properties, kLiteral: literals still possible
    uint32_t count = 0;  // kArr*: items so far
    uint16_t node = 0;
    uint16_t pos = 0;    // kKey, kLiteral: bytes matched
    uint16_t next = 0;   // kObj*: the first property not yet passed
    Phase phase = Phase::kStart;
    bool null_literal = false;  // kLiteral: matching "null" for a nullable node
    uint8_t choice = 0;         // kLiteral: the value matched; objects: the one their first property took
    json_lex::StringBody string;
    json_lex::Number number;
  };

  Step step(uint8_t c);
  Step start(Frame& f, uint8_t c);
  Step literal(Frame& f, uint8_t c);
  Step end_value();  // the top value is whole: pop it
  bool structural(const Frame& f) const;
  uint64_t allowed_keys(const Frame& f) const;
  bool required_left(const Frame& f) const;
  void push(int node);

  const JsonSchema* schema_ = nullptr;
  std::array<Frame, JsonSchema::kMaxDepth * 2 + 2> frames_{};
  uint8_t depth_ = 0;
  bool done_ = false;
  json_lex::Spacing space_;
};

using SchemaConstraint = PrefixConstraint<SchemaPrefix>;
// A forced tool call: the call's JSON (JsonSchema::compile_call) inside its model's markup.
using CallConstraint = PrefixConstraint<FramedPrefix<SchemaPrefix>>;

}  // namespace zinc::engine
