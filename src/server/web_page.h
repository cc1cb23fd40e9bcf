// The web chat page (src/server/web/index.html), embedded at build time (embed_file.cmake).
#pragma once

#include <string_view>

namespace zinc::server {

std::string_view web_page();

}  // namespace zinc::server
