#include "chat/render_case.h"

namespace zinc::chat {

Result<RenderCase> render_case_from_json(const nlohmann::ordered_json& j, std::string_view default_bos,
                                         std::string_view default_eos) {
  if (!j.is_object()) return error("a case must be a JSON object, not %s", j.type_name());
  RenderCase c;
  auto& ctx = c.context;
  ctx = nlohmann::ordered_json::object();
  const auto messages = j.find("messages");
  if (messages == j.end() || !messages->is_array()) return error("a case needs \"messages\": an array");
  ctx["messages"] = *messages;
  if (auto tools = j.find("tools"); tools != j.end() && !tools->is_null()) ctx["tools"] = *tools;
  ctx["add_generation_prompt"] = j.value("add_generation_prompt", false);
  for (const char* key : {"bos_token", "eos_token"}) {
    auto it = j.find(key);
    if (it != j.end() && !it->is_string()) return error("\"%s\" must be a string", key);
    ctx[key] = it != j.end() ? it->get<std::string>() : std::string(key[0] == 'b' ? default_bos : default_eos);
  }
  if (auto extra = j.find("context"); extra != j.end()) {
    if (!extra->is_object()) return error("\"context\" must be an object");
    for (const auto& [k, v] : extra->items()) ctx[k] = v;
  }
  if (auto now = j.find("now"); now != j.end()) {
    if (!now->is_string()) return error("\"now\" must be a string like 2026-01-15T09:30:00");
    ZINC_ASSIGN_OR_RETURN(std::tm tm, parse_local_time(now->get<std::string>()));
    c.options.now = tm;
  }
  return c;
}

Result<ModelTemplate> model_template(const gguf::File& file, std::string_view name) {
  const std::string key = name.empty() ? "tokenizer.chat_template" : "tokenizer.chat_template." + std::string(name);
  ModelTemplate t;
  ZINC_ASSIGN_OR_RETURN(auto source, file.find_string(key));
  if (!source) return error("the model has no %s", key.c_str());
  t.source = std::string(*source);
  ZINC_ASSIGN_OR_RETURN(const gguf::ValueView* tokens, file.find_array("tokenizer.ggml.tokens", gguf::ValueType::STRING));
  for (auto [id_key, text] : {std::pair{"tokenizer.ggml.bos_token_id", &t.bos_token},
                              std::pair{"tokenizer.ggml.eos_token_id", &t.eos_token}}) {
    ZINC_ASSIGN_OR_RETURN(auto id, file.find_uint(id_key));
    if (id && tokens && *id < tokens->array_count) *text = std::string(tokens->array_strings[*id]);
  }
  return t;
}

}  // namespace zinc::chat
