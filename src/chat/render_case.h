// The inputs of one rendering, from JSON in the shape of an entry of shared/templates/cases.json:
// {messages, tools?, add_generation_prompt?, context?: {extra variables}, bos_token?, eos_token?,
//  now?: "2026-01-15T09:30:00"}; and a model's chat template with its BOS/EOS texts from GGUF.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "chat/template.h"
#include "core/status.h"
#include "gguf/file.h"

namespace zinc::chat {

struct RenderCase {
  nlohmann::ordered_json context;  // the template's variables
  RenderOptions options;           // `now` when the case gives one
};

// bos/eos fall back to `default_bos` / `default_eos` when the case does not name them;
// add_generation_prompt defaults to false, `context` keys are added last (and win).
Result<RenderCase> render_case_from_json(const nlohmann::ordered_json& j, std::string_view default_bos = "<s>",
                                         std::string_view default_eos = "</s>");

struct ModelTemplate {
  std::string source;     // the Jinja text
  std::string bos_token;  // text of tokenizer.ggml.bos_token_id ("" when the vocabulary has none)
  std::string eos_token;
};

// tokenizer.chat_template (or tokenizer.chat_template.<name>) of a GGUF file; an error names the key.
Result<ModelTemplate> model_template(const gguf::File& file, std::string_view name = "");

}  // namespace zinc::chat
