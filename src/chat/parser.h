// Jinja2's grammar (expressions with Python precedence, if/for/set/macro/call/filter/with blocks,
// break/continue, Hugging Face's {% generation %}) into the AST of ast.h.
#pragma once

#include <memory>
#include <string_view>

#include "chat/ast.h"

namespace zinc::chat {

// Fails with a TemplateError carrying the line of the offending token.
std::unique_ptr<Program> parse_program(std::string_view source);

// Built-in filters and tests by name; null when unknown (the template fails only if it runs one).
FilterFn find_filter(std::string_view name);
TestFn find_test(std::string_view name);

}  // namespace zinc::chat
