// Structured outputs (response_format {"type": "json_schema"}): a JSON Schema compiled into a byte
// recogniser, so that generation can only write a document the schema accepts.
//
// The subset is what OpenAI's strict mode asks schemas to use, read the way llama.cpp's
// json-schema-to-grammar reads it:
//   - "type" string, number, integer, boolean, null, object or array, or an array of them;
//   - "enum" and "const" (any JSON values, written compactly);
//   - object "properties" written in the order listed, those in "required" always, the others
//     optional; other keys, anywhere among them, where "additionalProperties" is true or a
//     schema, or where an object lists no properties and says nothing of others (as llama.cpp
//     reads it: listed properties and no additionalProperties means none);
//   - a schema without a type or other keywords ({}): any JSON value;
//   - "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum" (numbers, or draft 4's
//     booleans) of integers and numbers (a bounded number is written without an exponent);
//     "multipleOf" of integers (a positive integer; refused on numbers);
//   - array "items" with "minItems" and "maxItems"; string "minLength" and "maxLength" (code
//     points, an escape counting as one), "pattern" (engine/regex.h) or "format" (date, time,
//     date-time, uuid, email, ipv4, hostname: each read as a pattern);
//   - "anyOf" and "oneOf" (read as anyOf: a document matching two alternatives is not refused);
//   - "allOf" (with any keywords beside it) merged into one schema as llama.cpp merges it: every
//     member's properties, their required lists joined, the tighter of two bounds, the enum
//     values both allow, a property in two members as the allOf of its two schemas; members that
//     disagree otherwise, or hold an anyOf beside other keywords, are refused;
//   - "$ref" to "#" or a JSON pointer into the same document ("#/$defs/Name", "#/definitions/Name"),
//     recursion included.
// Annotations (title, description, default, examples, $schema, $id, $comment, strict, $defs,
// definitions) are ignored. Any other keyword (patternProperties, if, ...) is refused by
// compile(), named in the error, rather than ignored: the output would not be held to it. The top
// level must be an object (as OpenAI requires). Whitespace between tokens as in JsonPrefix
// (json_lex::Spacing).
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/status.h"
#include "engine/json_lex.h"
#include "engine/number_bounds.h"
#include "engine/prefix_constraint.h"
#include "engine/regex.h"

namespace zinc::engine {

class JsonSchema {
 public:
  static constexpr int kMaxDepth = 16;       // nested objects and arrays written in the schema
  static constexpr int kMaxNodes = 4096;
  static constexpr int kMaxChoices = 64;     // properties of an object, values of an enum, alternatives
  static constexpr int kMaxText = 4096;      // bytes of a property name or an enum value

  enum class Kind : uint8_t { kString, kNumber, kInteger, kLiterals, kObject, kArray, kUnion };
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
    int extra = -1;                     // kObject: the node of values under other keys, or -1: none
    int items = -1;                     // kArray
    uint32_t min = 0, max = UINT32_MAX;  // kArray: items; kString: code points
    std::vector<int> alternatives;      // kUnion
    int pattern = -1;                   // kString: the Regex its value must match, or -1
    NumberBounds bounds;                // kNumber, kInteger
  };

  static Result<std::shared_ptr<const JsonSchema>> compile(const nlohmann::ordered_json& schema);
  // A tool call: {"name": one of the tools' names, args_key: that tool's parameters schema}.
  struct Tool {
    std::string name;
    nlohmann::ordered_json parameters;  // null: no parameters, {}
  };
  static Result<std::shared_ptr<const JsonSchema>> compile_call(const std::vector<Tool>& tools, const std::string& args_key);
  const Node& node(int i) const { return nodes_[size_t(i)]; }
  int root() const { return root_; }
  const Regex& pattern(int i) const { return patterns_[size_t(i)]; }

 private:
  struct Refs;  // the document $refs resolve in, and the nodes made for them
  Result<int> add(const nlohmann::ordered_json& s, int depth, const std::string& where, Refs& refs);
  Result<int> add_ref(const std::string& ref, int depth, const std::string& where, Refs& refs);
  Result<int> add_union(const nlohmann::ordered_json& alternatives, int depth, const std::string& where, Refs& refs);
  Result<int> add_pattern(const nlohmann::ordered_json& s, const std::string& where);
  int any_value();  // the node of any JSON value, made on first use
  int reserve();  // a node to fill in once its parts are made
  Status check_unions() const;
  std::vector<Node> nodes_;
  std::vector<Regex> patterns_;
  size_t pattern_budget_ = Regex::kMaxWork;  // what building the schema's patterns may still take
  std::map<std::string, int> pattern_of_;     // each pattern source compiled, and its index
  int root_ = 0;
  int any_ = -1;
};

// Reads bytes against a compiled schema (which must outlive it); a copyable value for
// PrefixConstraint. Where an anyOf leaves more than one reading open, each is followed (a path
// each, at most kMaxPaths; equal paths merge) until the bytes rule all but one out.
class SchemaPrefix {
 public:
  static constexpr int kMaxFrames = JsonSchema::kMaxDepth * 2 + 2;  // values open at once
  static constexpr size_t kMaxPaths = 64;

  SchemaPrefix() = default;
  explicit SchemaPrefix(const JsonSchema* schema) : SchemaPrefix(schema, schema->root()) {}
  SchemaPrefix(const JsonSchema* schema, int node);  // a value of one node (any type), not a document

  bool feed(uint8_t c);  // false: c cannot continue a document of the schema (the state is then unusable)
  bool complete() const;
  bool ends() const;  // complete, or would be if the text ended here (a number needs what follows to end)
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
  enum class Step : uint8_t { kFail, kOk, kAgain };  // kAgain: c is not read yet (a value ended before it, or began)
  struct Frame {
    uint64_t cand = 0;   // kKey: properties that may come here, kLiteral: literals, still possible
    uint64_t listed = 0; // kKey: properties matching so far, wherever they may come
    uint32_t count = 0;  // kArr*: items so far; kString: code points so far
    uint16_t dfa = 0;    // kString with a pattern: the Regex's state
    uint16_t high = 0;   // kString with a pattern: a \uD8xx escape waiting for its low half
    uint16_t node = 0;
    uint16_t pos = 0;    // kKey, kLiteral: bytes matched
    uint16_t next = 0;   // kObj*: the first property not yet passed
    Phase phase = Phase::kStart;
    bool null_literal = false;  // kLiteral: matching "null" for a nullable node
    uint8_t choice = 0;         // kLiteral: the value matched; objects: the one their first property took
    bool extra = false;         // kKey: a key of no listed property may still be read; kColon, kObjValue: it was
    json_lex::StringBody string;
    json_lex::Number number;
    bool operator==(const Frame&) const = default;
  };
  // One reading of the bytes so far: the values open, innermost last.
  class Path {
   public:
    Path() = default;
    Path(const Path& o) { *this = o; }
    Path& operator=(const Path& o);  // copies the frames in use only
    bool operator==(const Path& o) const;

    bool push(int node);  // false: too deep
    Step step(const JsonSchema& schema, uint8_t c);
    Frame& top() { return frames_[depth_ - 1]; }
    const Frame& top() const { return frames_[depth_ - 1]; }
    // The innermost value is an anyOf still to be chosen, and c is not whitespace before it.
    bool at_union(const JsonSchema& schema, uint8_t c) const;
    bool in_free_string(const JsonSchema& schema) const;
    bool done() const { return done_; }

   private:
    Step start(const JsonSchema& schema, Frame& f, uint8_t c);
    Step literal(const JsonSchema& schema, Frame& f, uint8_t c);
    Step string(const JsonSchema& schema, Frame& f, uint8_t c);
    Step number(const JsonSchema& schema, Frame& f, uint8_t c);
    Step end_value();  // the innermost value is whole: pop it
    bool structural(const Frame& f) const;

    std::array<Frame, kMaxFrames> frames_{};
    uint8_t depth_ = 0;
    bool done_ = false;
    json_lex::Spacing space_;
    NumberProgress number_;  // the number being written (always the innermost value) when bounded
  };

  bool feed_path(size_t i, uint8_t c);
  void merge_equal_paths();

  const JsonSchema* schema_ = nullptr;
  std::vector<Path> paths_;
};

using SchemaConstraint = PrefixConstraint<SchemaPrefix>;
// A forced tool call: the call's JSON (JsonSchema::compile_call) inside its model's markup.
using CallConstraint = PrefixConstraint<FramedPrefix<SchemaPrefix>>;

}  // namespace zinc::engine
