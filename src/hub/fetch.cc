#include "hub/fetch.h"

#include <openssl/evp.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <memory>
#include <thread>

#include <httplib.h>

namespace zinc::hub {
namespace fs = std::filesystem;
namespace {

constexpr int kMaxRedirects = 10;
constexpr int kAttempts = 3;

class Sha256 {
 public:
  Sha256() : ctx_(EVP_MD_CTX_new(), EVP_MD_CTX_free) { reset(); }
  void reset() { EVP_DigestInit_ex(ctx_.get(), EVP_sha256(), nullptr); }
  void add(const void* data, size_t n) { EVP_DigestUpdate(ctx_.get(), data, n); }
  std::string hex() {
    unsigned char digest[EVP_MAX_MD_SIZE];
    unsigned int n = 0;
    EVP_DigestFinal_ex(ctx_.get(), digest, &n);
    std::string out;
    char byte[3];
    for (unsigned int i = 0; i < n; ++i) {
      std::snprintf(byte, sizeof byte, "%02x", digest[i]);
      out += byte;
    }
    return out;
  }

 private:
  std::unique_ptr<EVP_MD_CTX, void (*)(EVP_MD_CTX*)> ctx_;
};

httplib::Headers request_headers(const std::string& origin, const std::string& token_origin, const std::string& token) {
  httplib::Headers h = {{"User-Agent", "zinc/" ZINC_VERSION}};
  if (!token.empty() && origin == token_origin) h.emplace("Authorization", "Bearer " + token);
  return h;
}

std::unique_ptr<httplib::Client> client_for(const std::string& origin) {
  auto c = std::make_unique<httplib::Client>(origin);
  c->set_follow_location(false);  // followed here, so that the token stays with its origin
  c->set_connection_timeout(15);
  c->set_read_timeout(60);
  return c;
}

// Where a redirect from `from` to `location` leads.
Result<Url> redirect_target(const Url& from, const std::string& location) {
  if (location.rfind("http://", 0) == 0 || location.rfind("https://", 0) == 0) return split_url(location);
  if (!location.empty() && location[0] == '/') return Url{from.origin, location};
  return error("a redirect to '%s', which is not a URL", location.c_str());
}

std::string describe(const httplib::Result& r) { return httplib::to_string(r.error()); }

// The Content-Length header's value; -1 when there is none or it is not a number.
int64_t content_length(const httplib::Response& res) {
  const std::string v = res.get_header_value("Content-Length");
  if (v.empty() || v.size() > 18 || v.find_first_not_of("0123456789") != std::string::npos) return -1;
  return std::stoll(v);
}

// The URL of a Link header's rel="next" entry: `<URL>; rel="next"`, among entries split by ','.
std::string next_page(const std::string& link) {
  size_t at = 0;
  while (at < link.size()) {
    const size_t open = link.find('<', at), close = link.find('>', open);
    if (open == std::string::npos || close == std::string::npos) break;
    const size_t end = std::min(link.find(',', close), link.size());
    if (link.substr(close, end - close).find("rel=\"next\"") != std::string::npos) return link.substr(open + 1, close - open - 1);
    at = end + 1;
  }
  return "";
}

}  // namespace

Result<Url> split_url(const std::string& url) {
  const size_t scheme_end = url.find("://");
  if (scheme_end == std::string::npos) return error("'%s' is not a URL", url.c_str());
  const std::string scheme = url.substr(0, scheme_end);
  if (scheme != "http" && scheme != "https") return error("'%s': only http and https URLs", url.c_str());
  const size_t path_start = url.find('/', scheme_end + 3);
  Url u;
  u.origin = url.substr(0, path_start);
  u.target = path_start == std::string::npos ? "/" : url.substr(path_start);
  if (u.origin.size() == scheme_end + 3) return error("'%s' has no host", url.c_str());
  return u;
}

std::string sha256_hex(std::string_view bytes) {
  Sha256 h;
  h.add(bytes.data(), bytes.size());
  return h.hex();
}

JsonReply get_json(const std::string& url, const std::string& token) {
  JsonReply reply;
  auto first = split_url(url);
  if (!first.ok()) {
    reply.error = first.status().message();
    return reply;
  }
  Url at = *first;
  for (int hop = 0; hop <= kMaxRedirects; ++hop) {
    auto cli = client_for(at.origin);
    httplib::Headers headers = request_headers(at.origin, first->origin, token);
    headers.emplace("Accept", "application/json");
    auto r = cli->Get(at.target, headers);
    if (!r) {
      reply.error = at.origin + ": " + describe(r);
      return reply;
    }
    if (r->status >= 300 && r->status < 400 && r->has_header("Location")) {
      auto next = redirect_target(at, r->get_header_value("Location"));
      if (!next.ok()) {
        reply.error = next.status().message();
        return reply;
      }
      at = *next;
      continue;
    }
    reply.status = r->status;
    reply.next = next_page(r->get_header_value("Link"));
    reply.body = nlohmann::json::parse(r->body, nullptr, /*allow_exceptions=*/false);
    if (reply.body.is_discarded()) reply.error = "HTTP " + std::to_string(r->status) + ", not JSON";
    else if (r->status != 200) reply.error = "HTTP " + std::to_string(r->status);
    return reply;
  }
  reply.error = url + ": more than " + std::to_string(kMaxRedirects) + " redirects";
  return reply;
}

Status download_file(const std::string& url, const std::string& token, const fs::path& dest, const FileCheck& check,
                     const Progress& progress) {
  ZINC_ASSIGN_OR_RETURN(const Url first, split_url(url));
  const fs::path part = dest.string() + ".incomplete";
  std::error_code ec;
  fs::create_directories(dest.parent_path(), ec);
  if (ec) return error("%s: %s", dest.parent_path().c_str(), ec.message().c_str());

  Sha256 hash;
  int64_t have = 0;  // bytes in `part`, all in `hash`
  auto restart = [&] {
    std::ofstream(part, std::ios::binary | std::ios::trunc);
    hash.reset();
    have = 0;
  };
  if (fs::exists(part)) {  // a download that stopped: hash what it has, then ask for the rest
    std::ifstream in(part, std::ios::binary);
    std::vector<char> buf(1 << 20);
    while (in.read(buf.data(), std::streamsize(buf.size())) || in.gcount() > 0) {
      hash.add(buf.data(), size_t(in.gcount()));
      have += in.gcount();
    }
    if (check.size >= 0 && have > check.size) restart();
  } else {
    restart();
  }

  std::string last_error;
  for (int attempt = 0; attempt < kAttempts; ++attempt) {
    if (attempt > 0) std::this_thread::sleep_for(std::chrono::seconds(attempt));
    Url at = first;
    bool done = false, retry = false;
    for (int hop = 0; hop <= kMaxRedirects && !done && !retry; ++hop) {
      auto cli = client_for(at.origin);
      httplib::Headers headers = request_headers(at.origin, first.origin, token);
      const bool ranged = have > 0;
      if (ranged) headers.emplace("Range", "bytes=" + std::to_string(have) + "-");
      std::ofstream out;
      int status = 0;
      int64_t total = -1;
      std::string location, small_body;
      bool write_failed = false;
      auto r = cli->Get(
          at.target, headers,
          [&](const httplib::Response& res) {
            status = res.status;
            if (res.status >= 300 && res.status < 400) location = res.get_header_value("Location");
            if (res.status == 200 && ranged) restart();  // the server sends everything again
            if (res.status == 200 || res.status == 206) {
              if (const int64_t n = content_length(res); n >= 0) total = have + n;
              out.open(part, std::ios::binary | std::ios::app);
              if (!out) write_failed = true;
            }
            return !write_failed;
          },
          [&](const char* data, size_t n) {
            if (status != 200 && status != 206) {
              if (small_body.size() < 512) small_body.append(data, std::min<size_t>(n, 512));
              return true;
            }
            out.write(data, std::streamsize(n));
            if (!out) {
              write_failed = true;
              return false;
            }
            hash.add(data, n);
            have += int64_t(n);
            if (progress) progress(have, total >= 0 ? total : check.size);
            return true;
          });
      out.close();
      if (write_failed) return error("%s: cannot write (disk full?)", part.c_str());
      if (!r) {
        last_error = at.origin + ": " + describe(r);
        retry = true;
      } else if (status >= 300 && status < 400 && !location.empty()) {
        ZINC_ASSIGN_OR_RETURN(at, redirect_target(at, location));
      } else if (status == 416 && ranged && check.size == have) {
        done = true;  // everything was already there
      } else if (status == 416 && ranged) {
        restart();
        retry = true;
        --attempt;  // not a failure of the connection
      } else if (status == 200 || status == 206) {
        done = true;
      } else if (status >= 500) {
        last_error = url + ": HTTP " + std::to_string(status);
        retry = true;
      } else {
        std::replace_if(small_body.begin(), small_body.end(), [](char c) { return c == '\n' || c == '\r'; }, ' ');
        return error("%s: HTTP %d%s", url.c_str(), status, small_body.empty() ? "" : (" (" + small_body + ")").c_str());
      }
    }
    if (!done && !retry) return error("%s: more than %d redirects", url.c_str(), kMaxRedirects);
    if (!done) continue;
    if (check.size >= 0 && have != check.size) {
      last_error = format("%s: %lld bytes where %lld were expected", url.c_str(), (long long)have, (long long)check.size);
      if (have > check.size) restart();
      continue;
    }
    if (!check.sha256.empty()) {
      const std::string got = hash.hex();
      if (got != check.sha256) {
        fs::remove(part, ec);
        return error("%s: the download's sha256 is %s, not %s as the repository says; it was discarded", url.c_str(), got.c_str(),
                     check.sha256.c_str());
      }
    }
    fs::rename(part, dest, ec);
    if (ec) return error("%s: %s", dest.c_str(), ec.message().c_str());
    return ok_status();
  }
  return error("%s: download failed after %d attempts: %s (run again to resume)", url.c_str(), kAttempts, last_error.c_str());
}

}  // namespace zinc::hub
