#include "chat/template.h"

#include <cstdio>
#include <new>

#include "chat/builtins.h"
#include "chat/interpreter.h"
#include "chat/parser.h"

namespace zinc::chat {
namespace {

Status to_status(const TemplateError& e) {
  return e.line > 0 ? error("line %d: %s", e.line, e.message.c_str()) : error(e.message);
}

}  // namespace

Result<Template> Template::parse(std::string_view source) {
  try {
    std::unique_ptr<Program> program = parse_program(source);
    program->globals.reserve(program->symbols.size());
    for (const std::string& name : program->symbols) program->globals.push_back(make_global(name));
    return Template(std::shared_ptr<const Program>(std::move(program)));
  } catch (const TemplateError& e) {
    return to_status(e);
  } catch (const std::bad_alloc&) {
    return error("out of memory while parsing the template");
  }
}

Result<std::string> Template::render(const nlohmann::ordered_json& context, const RenderOptions& options) const {
  Interpreter in(*program_, options);
  try {
    return in.render(context);
  } catch (TemplateError& e) {
    if (e.line == 0) e.line = in.line();
    return to_status(e);
  } catch (const std::bad_alloc&) {
    return error("line %d: out of memory while rendering the template", in.line());
  } catch (const std::exception& e) {  // e.g. a JSON conversion; nothing may escape the module
    return error("line %d: %s", in.line(), e.what());
  }
}

Result<std::tm> parse_local_time(std::string_view text) {
  std::tm tm{};
  int year = 0, month = 0, day = 0, hour = 0, minute = 0, second = 0;
  char sep = 'T';
  std::string s(text);
  int n = std::sscanf(s.c_str(), "%4d-%2d-%2d%c%2d:%2d:%2d", &year, &month, &day, &sep, &hour, &minute, &second);
  bool ok = (n == 3 && s.size() == 10) || (n == 7 && (sep == 'T' || sep == ' '));
  if (!ok || month < 1 || month > 12 || day < 1 || day > 31 || hour > 23 || minute > 59 || second > 60)
    return error("'%s' is not a local time like 2026-01-15T09:30:00", s.c_str());
  tm.tm_year = year - 1900;
  tm.tm_mon = month - 1;
  tm.tm_mday = day;
  tm.tm_hour = hour;
  tm.tm_min = minute;
  tm.tm_sec = second;
  tm.tm_isdst = 0;
  // Fill in the weekday and day of the year (timegm works in UTC, so no time zone shifts the date).
  std::tm normalized = tm;
  std::time_t t = timegm(&normalized);
  std::tm check{};
  gmtime_r(&t, &check);
  if (check.tm_mday != day) return error("'%s' is not a valid date", s.c_str());
  tm.tm_wday = check.tm_wday;
  tm.tm_yday = check.tm_yday;
  return tm;
}

}  // namespace zinc::chat
