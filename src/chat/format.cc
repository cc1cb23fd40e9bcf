// Python's string formatting for templates: `fmt % values` (printf style) and str.format.
#include <cstdio>
#include <cstdlib>

#include "chat/builtins.h"
#include "chat/text.h"

namespace zinc::chat {

namespace {

// One replacement field of str.format: {name!conv:spec} with spec [[fill]align][width][.precision][type].
std::string format_field(const Value& v, char conversion, std::string_view spec) {
  std::string fill = " ";
  char align = 0;
  size_t i = 0;
  if (spec.size() >= 2 && std::string_view("<>^").find(spec[1]) != std::string_view::npos) {
    fill = std::string(1, spec[0]);
    align = spec[1];
    i = 2;
  } else if (!spec.empty() && std::string_view("<>^").find(spec[0]) != std::string_view::npos) {
    align = spec[0];
    i = 1;
  }
  int64_t width = 0;
  while (i < spec.size() && text::is_digit(uint8_t(spec[i]))) width = width * 10 + (spec[i++] - '0');
  int precision = -1;
  if (i < spec.size() && spec[i] == '.') {
    precision = 0;
    while (++i < spec.size() && text::is_digit(uint8_t(spec[i]))) precision = precision * 10 + (spec[i] - '0');
  }
  char type = i < spec.size() ? spec[i++] : 0;
  if (i != spec.size() || (type && std::string_view("sdf").find(type) == std::string_view::npos))
    fail("format spec '" + std::string(spec) + "' is not supported");
  std::string s;
  if (conversion == 'r') s = v.repr();
  else if (type == 'f' || (precision >= 0 && v.is_float() && type != 's')) {
    if (!v.is_number()) fail("format code 'f' needs a number, got " + std::string(v.type_name()));
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.*f", precision < 0 ? 6 : precision, v.as_double());
    s = buf;
  } else {
    if (type == 'd' && !v.is_integral()) fail("format code 'd' needs an integer, got " + std::string(v.type_name()));
    s = v.to_str();
    if (precision >= 0 && v.is_string()) {
      auto offsets = text::code_point_offsets(s);
      if (size_t(precision) + 1 < offsets.size()) s.resize(offsets[precision]);
    }
  }
  if (!align) align = v.is_number() && conversion != 'r' ? '>' : '<';
  return text::pad(s, width, align, fill);
}

}  // namespace

std::string str_format(const std::string& fmt, const CallArgs& args, size_t max_bytes) {
  std::string out;
  size_t auto_index = 0;
  for (size_t i = 0; i < fmt.size(); ++i) {
    char c = fmt[i];
    if (c == '}') {
      if (i + 1 < fmt.size() && fmt[i + 1] == '}') ++i;
      else fail("Single '}' encountered in format string");
      out += '}';
      continue;
    }
    if (c != '{') {
      out += c;
      continue;
    }
    if (i + 1 < fmt.size() && fmt[i + 1] == '{') {
      out += '{';
      ++i;
      continue;
    }
    size_t close = fmt.find('}', i);
    if (close == std::string::npos) fail("Single '{' encountered in format string");
    std::string_view field(fmt.data() + i + 1, close - i - 1);
    i = close;
    std::string_view spec, name = field;
    char conversion = 0;
    if (size_t colon = field.find(':'); colon != std::string_view::npos) spec = field.substr(colon + 1), name = field.substr(0, colon);
    if (size_t bang = name.find('!'); bang != std::string_view::npos) {
      conversion = bang + 1 < name.size() ? name[bang + 1] : 0;
      name = name.substr(0, bang);
    }
    const Value* v = nullptr;
    if (name.empty() || text::is_digit(uint8_t(name[0]))) {
      size_t index = name.empty() ? auto_index++ : size_t(std::atoll(std::string(name).c_str()));
      if (index >= args.positional.size()) fail(format("Replacement index %zu out of range for positional args tuple", index));
      v = &args.positional[index];
    } else {
      for (const auto& [k, kv] : args.keyword)
        if (k == name) v = &kv;
      if (!v) fail("KeyError: '" + std::string(name) + "'");
    }
    out += format_field(*v, conversion, spec);
    if (out.size() > max_bytes) fail("format() result too large");
  }
  return out;
}

std::string percent_format(std::string_view fmt, const Value& values, size_t max_bytes) {
  std::vector<Value> positional;
  const bool mapping = values.is_dict();
  if (values.is_array() && values.array().is_tuple) positional = values.array().items;
  else if (!mapping) positional.push_back(values);
  size_t next = 0;
  std::string out;
  for (size_t i = 0; i < fmt.size(); ++i) {
    if (fmt[i] != '%') {
      out += fmt[i];
      continue;
    }
    if (++i >= fmt.size()) fail("incomplete format");
    const Value* arg = nullptr;
    if (fmt[i] == '(') {
      size_t close = fmt.find(')', i);
      if (close == std::string_view::npos) fail("incomplete format key");
      if (!mapping) fail("format requires a mapping");
      arg = values.object().find(fmt.substr(i + 1, close - i - 1));
      if (!arg) fail("KeyError: '" + std::string(fmt.substr(i + 1, close - i - 1)) + "'");
      i = close + 1;
    }
    std::string flags;
    while (i < fmt.size() && std::string_view("-+ 0#").find(fmt[i]) != std::string_view::npos) flags += fmt[i++];
    std::string width, precision;
    while (i < fmt.size() && text::is_digit(uint8_t(fmt[i]))) width += fmt[i++];
    if (i < fmt.size() && fmt[i] == '.') {
      precision = ".";
      while (++i < fmt.size() && text::is_digit(uint8_t(fmt[i]))) precision += fmt[i];
    }
    if (i >= fmt.size()) fail("incomplete format");
    const char type = fmt[i];
    if (type == '%') {
      out += '%';
      continue;
    }
    if (!arg) {
      if (mapping) fail("format requires a mapping");
      if (next >= positional.size()) fail("not enough arguments for format string");
      arg = &positional[next++];
    }
    std::string spec = "%" + flags + width + precision;
    char buf[512];
    switch (type) {
      case 's':
      case 'r': {
        std::string s = type == 's' ? arg->to_str() : arg->repr();
        if (precision.size() > 1) {
          auto offsets = text::code_point_offsets(s);
          size_t keep = size_t(std::atoll(precision.c_str() + 1));
          if (keep + 1 < offsets.size()) s.resize(offsets[keep]);
        }
        if (!width.empty()) s = text::pad(s, std::atoll(width.c_str()), flags.find('-') != std::string::npos ? '<' : '>', " ");
        out += s;
        break;
      }
      case 'd':
      case 'i':
      case 'x':
      case 'X':
      case 'o':
        if (!arg->is_number()) fail(format("%%%c format: a number is required, not %s", type, std::string(arg->type_name()).c_str()));
        std::snprintf(buf, sizeof buf, (spec + "ll" + (type == 'i' ? 'd' : type)).c_str(),
                      (long long)(arg->is_float() ? int64_t(arg->as_double()) : arg->as_int()));
        out += buf;
        break;
      case 'f':
      case 'F':
      case 'e':
      case 'E':
      case 'g':
      case 'G':
        if (!arg->is_number()) fail(format("must be real number, not %s", std::string(arg->type_name()).c_str()));
        std::snprintf(buf, sizeof buf, (spec + type).c_str(), arg->as_double());
        out += buf;
        break;
      case 'c':
        if (arg->is_integral()) text::append_utf8(out, uint32_t(arg->as_int()));
        else out += arg->to_str();
        break;
      default: fail(format("unsupported format character '%c'", type));
    }
    if (out.size() > max_bytes) fail("formatted string too large");
  }
  if (!mapping && next < positional.size()) fail("not all arguments converted during string formatting");
  return out;
}

}  // namespace zinc::chat
