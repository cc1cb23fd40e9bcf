#include "engine/xml_call.h"

#include <algorithm>
#include <string_view>

namespace zinc::engine {

namespace {

using Json = nlohmann::ordered_json;

const std::vector<std::string> kHead = {"<tool_call>\n<function="};
const std::vector<std::string> kNext = {"<parameter=", "</function>\n</tool_call>"};
const std::vector<std::string> kTail = {"\n</parameter>\n"};
constexpr std::string_view kEnd = "\n</parameter>";
// Tags a raw value may not hold. Each starts with '<' and has no other, so a mismatch restarts
// the match at c.
constexpr std::string_view kTags[3] = {"</parameter>", "</function>", "</tool_call>"};

uint64_t first_n(size_t n) { return n >= 64 ? ~uint64_t(0) : (uint64_t(1) << n) - 1; }

bool writable(const std::string& name) { return !name.empty() && name.find_first_of(">\n") == std::string::npos; }

}  // namespace

Result<std::shared_ptr<const XmlCall>> XmlCall::compile(const std::vector<JsonSchema::Tool>& tools) {
  auto call = std::make_shared<XmlCall>();
  ZINC_ASSIGN_OR_RETURN(call->schema_, JsonSchema::compile_call(tools, "arguments"));
  const JsonSchema& schema = *call->schema_;
  const std::vector<int>& by_tool = schema.node(schema.root()).properties[1].by_choice;
  for (size_t i = 0; i < tools.size(); ++i) {
    const std::string& name = tools[i].name;
    if (!writable(name)) return error("tool '%s': a name holding '>' or a newline cannot be written as <function=...>", name.c_str());
    call->names_.push_back(name + ">\n");
    const Json& params = tools[i].parameters;
    const Json props = params.is_object() ? params.value("properties", Json::object()) : Json::object();
    Tool tool;
    for (const JsonSchema::Property& p : schema.node(by_tool[i]).properties) {
      const std::string key = Json::parse(p.key).get<std::string>();
      if (!writable(key))
        return error("tool '%s': a parameter name holding '>' or a newline cannot be written as <parameter=...>", name.c_str());
      Parameter out;
      out.node = p.node;
      out.required = p.required;
      // As chat::ToolCallParser reads a call back: a parameter typed "string" is its text.
      out.raw = props.contains(key) && props[key].is_object() && props[key].value("type", Json()) == "string";
      const JsonSchema::Node& n = schema.node(p.node);
      if (out.raw && n.kind == JsonSchema::Kind::kLiterals) {
        for (const std::string& literal : n.literals) {
          const Json v = Json::parse(literal);
          if (!v.is_string()) return error("tool '%s': parameter '%s' is a string with a value that is not", name.c_str(), key.c_str());
          out.values.push_back(v.get<std::string>() + std::string(kTail[0]));
        }
      } else if (out.raw) {
        out.min = n.min;
        out.max = n.max;
        out.pattern = n.pattern;
      }
      tool.parameters.push_back(std::move(out));
      tool.keys.push_back(key + ">\n");
    }
    call->tools_.push_back(std::move(tool));
  }
  return std::shared_ptr<const XmlCall>(std::move(call));
}

XmlCallPrefix::XmlCallPrefix(const XmlCall* call) : call_(call) { begin(Phase::kHead, 1); }

void XmlCallPrefix::begin(Phase phase, uint64_t candidates) {
  phase_ = phase;
  cand_ = candidates;
  pos_ = 0;
}

void XmlCallPrefix::begin_next() {
  const auto& params = tool().parameters;
  bool required_left = false;
  for (size_t i = 0; i < params.size(); ++i) required_left |= params[i].required && !(given_ >> i & 1u);
  const bool params_left = (given_ & first_n(params.size())) != first_n(params.size());
  begin(Phase::kNext, (params_left ? 1u : 0u) | (required_left ? 0u : 2u));
}

int XmlCallPrefix::match(const std::vector<std::string>& texts, uint8_t c) {
  uint64_t next = 0;
  for (size_t i = 0; i < texts.size(); ++i)
    if ((cand_ >> i & 1u) && pos_ < texts[i].size() && uint8_t(texts[i][pos_]) == c) next |= uint64_t(1) << i;
  if (next == 0) return -2;
  cand_ = next;
  ++pos_;
  for (size_t i = 0; i < texts.size(); ++i)
    if ((next >> i & 1u) && texts[i].size() == pos_) return int(i);
  return -1;
}

bool XmlCallPrefix::feed(uint8_t c) {
  int whole = -1;
  switch (phase_) {
    case Phase::kHead:
      if ((whole = match(kHead, c)) == -2) return false;
      if (whole >= 0) begin(Phase::kName, first_n(call_->names().size()));
      return true;
    case Phase::kName:
      if ((whole = match(call_->names(), c)) == -2) return false;
      if (whole >= 0) {
        tool_ = uint16_t(whole);
        given_ = 0;
        begin_next();
      }
      return true;
    case Phase::kNext:
      if ((whole = match(kNext, c)) == -2) return false;
      if (whole == 0) begin(Phase::kKey, first_n(tool().keys.size()) & ~given_);
      else if (whole == 1) phase_ = Phase::kDone;
      return true;
    case Phase::kKey:
      if ((whole = match(tool().keys, c)) == -2) return false;
      if (whole >= 0) {
        param_ = uint16_t(whole);
        given_ |= uint64_t(1) << whole;
        const XmlCall::Parameter& p = parameter();
        if (p.raw && !p.values.empty()) {
          begin(Phase::kValue, first_n(p.values.size()));
        } else if (p.raw) {
          phase_ = Phase::kRaw;
          points_ = 0;
          end_tag_ = 0;
          std::fill(std::begin(tags_), std::end(tags_), 0);
          utf8_ = json_lex::Utf8();
          dfa_ = 0;
        } else {
          phase_ = Phase::kJson;
          json_ = SchemaPrefix(call_->schema(), p.node);
        }
      }
      return true;
    case Phase::kValue:
      if ((whole = match(parameter().values, c)) == -2) return false;
      if (whole >= 0) begin_next();
      return true;
    case Phase::kRaw:
      return raw(c);
    case Phase::kJson:
      if (c == '\n' && json_.ends()) {  // the value is whole: "\n</parameter>\n" follows
        begin(Phase::kTail, 1);
        pos_ = 1;
        return true;
      }
      return json_.feed(c);
    case Phase::kTail:
      if ((whole = match(kTail, c)) == -2) return false;
      if (whole >= 0) begin_next();
      return true;
    case Phase::kDone:
      return false;
  }
  return false;
}

bool XmlCallPrefix::raw(uint8_t c) {
  const bool new_point = utf8_.between();
  if (!utf8_.step(c) || (c < 0x20 && c != '\n' && c != '\t' && c != '\r')) return false;
  if (new_point) ++points_;
  const uint8_t held = end_tag_;  // bytes of "\n</parameter>" held back from the pattern
  end_tag_ = uint8_t(c == uint8_t(kEnd[held]) ? held + 1 : c == '\n' ? 1 : 0);
  bool tag = false;
  for (int t = 0; t < 3; ++t) {
    tags_[t] = uint8_t(c == uint8_t(kTags[t][tags_[t]]) ? tags_[t] + 1 : c == '<' ? 1 : 0);
    tag |= tags_[t] == kTags[t].size();
  }
  const XmlCall::Parameter& p = parameter();
  if (p.pattern >= 0 && end_tag_ != held + 1) {  // what was held is text after all, and c too unless it starts a hold
    const Regex& regex = call_->schema()->pattern(p.pattern);
    for (uint8_t k = 0; k < held; ++k) dfa_ = regex.step(dfa_, uint8_t(kEnd[k]));
    if (end_tag_ == 0 && utf8_.between()) dfa_ = regex.step(dfa_, utf8_.value());
    if (dfa_ == Regex::kDead) return false;
  }
  if (end_tag_ == kEnd.size()) {  // the value ends before its last newline
    if (points_ - kEnd.size() < p.min) return false;
    if (p.pattern >= 0 && !call_->schema()->pattern(p.pattern).accepts(dfa_)) return false;
    begin(Phase::kTail, 1);
    pos_ = uint32_t(kEnd.size());
    return true;
  }
  return !tag && points_ - end_tag_ <= p.max;
}

}  // namespace zinc::engine
