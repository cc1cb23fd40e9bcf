// Chat templates: a model's `tokenizer.chat_template` (Jinja2) run the way Hugging Face runs it —
// sandboxed, trim_blocks, lstrip_blocks, loop controls, `tojson` as json.dumps with
// ensure_ascii=False, and the globals `raise_exception` and `strftime_now`.
//
//   ZINC_ASSIGN_OR_RETURN(auto t, chat::Template::parse(source));
//   ZINC_ASSIGN_OR_RETURN(std::string prompt, t.render({{"messages", messages}, {"add_generation_prompt", true}}));
//
// Errors (syntax, raise_exception, runtime) come back as a Status naming the template line.
#pragma once

#include <ctime>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "core/status.h"

namespace zinc::chat {

struct Program;

// Guards against runaway templates; a template that crosses one fails with a message naming it.
struct RenderLimits {
  size_t max_output_bytes = 64u << 20;  // bytes written (macro and block captures included); also
                                        // the largest string or list one expression may build
  int max_call_depth = 200;             // nested macro calls
  uint64_t max_steps = 10'000'000;      // loop iterations plus macro calls
};

struct RenderOptions {
  std::optional<std::tm> now;  // the local time strftime_now formats; the current time when absent
  RenderLimits limits;
};

// Parsed once, rendered many times; cheap to copy (shares the parsed program); thread-compatible.
class Template {
 public:
  // Fails on a syntax error ("line 3: unexpected 'endfor'").
  static Result<Template> parse(std::string_view source);

  // `context` must be an object; its keys become template variables (messages, tools,
  // add_generation_prompt, bos_token, eos_token, enable_thinking, ...). The result is the rendering,
  // byte for byte; a template that raises fails with its message ("line 1: System role not supported").
  Result<std::string> render(const nlohmann::ordered_json& context, const RenderOptions& options = {}) const;

 private:
  explicit Template(std::shared_ptr<const Program> program) : program_(std::move(program)) {}
  std::shared_ptr<const Program> program_;
};

// Parses a local time "YYYY-MM-DDTHH:MM:SS" (also with a space, or only the date) for RenderOptions::now.
Result<std::tm> parse_local_time(std::string_view text);

}  // namespace zinc::chat
