// A forced tool call in the XML form Qwen3-Coder and Qwen3.5 write (chat::ToolCallSyntax::kQwenXml):
//
//   <tool_call>\n<function=NAME>\n<parameter=KEY>\nVALUE\n</parameter>\n ... </function>\n</tool_call>
//
// NAME is one of the tools; each KEY one of that tool's parameters, at most once, in any order, the
// required ones all before </function>. A parameter whose schema says "type": "string" is written
// as raw text (the way chat::ToolCallParser reads it back): valid UTF-8, its length within
// minLength / maxLength, matching its pattern or format, one of its enum values when it has some, and never holding
// </parameter>, </function> or </tool_call>. Any other parameter is JSON following its schema
// (SchemaPrefix).
#pragma once

#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/status.h"
#include "engine/json_lex.h"
#include "engine/json_schema.h"
#include "engine/prefix_constraint.h"

namespace zinc::engine {

class XmlCall {
 public:
  struct Parameter {
    int node = -1;  // in schema()
    bool required = false;
    bool raw = false;                 // "type": "string": text, not JSON
    std::vector<std::string> values;  // raw with an enum: each value allowed, then "\n</parameter>\n"
    uint32_t min = 0, max = UINT32_MAX;  // raw: code points
    int pattern = -1;                    // raw: the schema's Regex the text must match, or -1
  };
  struct Tool {
    std::vector<Parameter> parameters;
    std::vector<std::string> keys;  // each parameter's name, then ">\n"
  };

  static Result<std::shared_ptr<const XmlCall>> compile(const std::vector<JsonSchema::Tool>& tools);
  const JsonSchema* schema() const { return schema_.get(); }
  const std::vector<Tool>& tools() const { return tools_; }
  const std::vector<std::string>& names() const { return names_; }  // each tool's name, then ">\n"

 private:
  std::shared_ptr<const JsonSchema> schema_;
  std::vector<Tool> tools_;
  std::vector<std::string> names_;
};

// Reads bytes against a compiled call (which must outlive it); a copyable value for PrefixConstraint.
class XmlCallPrefix {
 public:
  XmlCallPrefix() = default;
  explicit XmlCallPrefix(const XmlCall* call);

  bool feed(uint8_t c);
  bool complete() const { return phase_ == Phase::kDone; }
  bool in_free_string() const { return phase_ == Phase::kJson && json_.in_free_string(); }

 private:
  enum class Phase : uint8_t {
    kHead,   // "<tool_call>\n<function="
    kName,   // a tool's name, then ">\n"
    kNext,   // "<parameter=" or "</function>\n</tool_call>"
    kKey,    // a parameter not given yet, then ">\n"
    kValue,  // one of a raw parameter's enum values, then "\n</parameter>\n"
    kRaw,    // raw text up to "\n</parameter>"
    kJson,   // a JSON value
    kTail,   // the rest of "\n</parameter>\n"
    kDone,
  };
  // One of several texts byte by byte: -2 if c continues none of the candidates, else the one
  // now matched whole, or -1.
  int match(const std::vector<std::string>& texts, uint8_t c);
  void begin(Phase phase, uint64_t candidates);
  void begin_next();  // after the name or a parameter
  bool raw(uint8_t c);
  const XmlCall::Tool& tool() const { return call_->tools()[tool_]; }
  const XmlCall::Parameter& parameter() const { return tool().parameters[param_]; }

  const XmlCall* call_ = nullptr;
  Phase phase_ = Phase::kHead;
  uint64_t cand_ = 0;  // the texts still possible
  uint32_t pos_ = 0;   // bytes of the current text matched
  uint16_t tool_ = 0, param_ = 0;
  uint64_t given_ = 0;  // parameters written
  // kRaw: code points so far, and how far each closing tag is matched.
  uint32_t points_ = 0;
  uint8_t end_tag_ = 0;  // "\n</parameter>"
  uint8_t tags_[3] = {0, 0, 0};  // "</parameter>", "</function>", "</tool_call>"
  uint16_t dfa_ = 0;             // the pattern's state after the text before a held end tag
  json_lex::Utf8 utf8_;
  SchemaPrefix json_;
};

using XmlCallConstraint = PrefixConstraint<XmlCallPrefix>;

}  // namespace zinc::engine
