// Where a command's model comes from: a GGUF file, a Hugging Face repository (llama.cpp's -hf
// OWNER/NAME[:QUANT], downloaded into the hub cache, cache.h), or a URL (llama.cpp's -mu).
// The hub's address is $HF_ENDPOINT (or $MODEL_ENDPOINT), https://huggingface.co by default; its
// token --hf-token, else $HF_TOKEN.
#pragma once

#include <functional>
#include <string>

#include "core/status.h"

namespace zinc::hub {

struct ModelSource {
  std::string path;      // -m: a local file (with url: where the download goes)
  std::string hf_repo;   // OWNER/NAME[:QUANT]
  std::string hf_file;   // a file of the repository, instead of the QUANT's
  std::string hf_token;
  std::string url;
  bool offline = false;  // only what the cache has ($HF_HUB_OFFLINE=1 too)
};

// Progress lines go here (a download's start, percentage and end; a fallback to the cache).
using Notice = std::function<void(const std::string& line, bool transient)>;

// The local path of the model, downloading it first where it is not cached. Without a
// repository or URL, `path` as it is.
Result<std::string> resolve_model(const ModelSource& source, const Notice& notice);

// The name a server reports for it: the repository reference, else the file's stem.
std::string model_display_name(const ModelSource& source, const std::string& path);

}  // namespace zinc::hub
