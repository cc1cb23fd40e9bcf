// HTTP(S) GETs for the hub, with cpp-httplib: JSON documents, and whole files written through a
// resumable temporary file and checked against their size and sha256. Redirects are followed (the
// hub sends file contents from another host); a bearer token goes only to the origin it was
// given for, never to the host a redirect names.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>

#include <nlohmann/json.hpp>

#include "core/status.h"

namespace zinc::hub {

// "https://host[:port]/path?query" -> origin "https://host[:port]", target "/path?query".
struct Url {
  std::string origin, target;
};
Result<Url> split_url(const std::string& url);

struct JsonReply {
  int status = 0;       // 0: no answer (a network error; `error` says which)
  nlohmann::json body;  // a JSON answer's body
  std::string error;    // why there is no body: the network, a status, or text that is not JSON
  std::string next;     // a paginated answer's next page (its Link header's rel="next"), else ""
};
JsonReply get_json(const std::string& url, const std::string& token);

struct FileCheck {
  int64_t size = -1;   // -1: unchecked
  std::string sha256;  // lower-case hex; empty: unchecked
};
using Progress = std::function<void(int64_t done, int64_t total)>;  // total -1 when unknown

// Downloads `url` into `dest`. The bytes go to `dest` + ".incomplete" first, which a later call
// resumes with a range request; only a whole, checked file is renamed to `dest`. Connection
// failures are retried twice, from where they stopped.
Status download_file(const std::string& url, const std::string& token, const std::filesystem::path& dest, const FileCheck& check,
                     const Progress& progress);

// The sha256 of bytes, in lower-case hex (for tests and checks).
std::string sha256_hex(std::string_view bytes);

}  // namespace zinc::hub
