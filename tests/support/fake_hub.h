// A Hugging Face hub on 127.0.0.1 for tests of -hf downloads (hub/): the API's refs and tree
// listings of one repository, its resolve URLs, which redirect to a second origin (as the hub's
// CDN) that serves the bytes with range requests. Records what the clients sent.
#pragma once

#include <httplib.h>

#include <atomic>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "hub/fetch.h"

namespace zinc::test {

class FakeHub {
 public:
  struct File {
    File(std::string p, std::string c, bool is_lfs = true, std::string sha = "")
        : path(std::move(p)), content(std::move(c)), lfs(is_lfs), listed_sha256(std::move(sha)) {}
    std::string path, content;
    bool lfs = true;
    std::string listed_sha256;  // what the tree says the LFS sha256 is ("" : the true one)
  };
  static constexpr const char* kCommit = "0123456789abcdef0123456789abcdef01234567";

  FakeHub(std::string repo, std::vector<File> files) : repo_(std::move(repo)), files_(std::move(files)) {
    for (auto& f : files_)
      if (f.listed_sha256.empty()) f.listed_sha256 = hub::sha256_hex(f.content);
    const std::string api = "/api/models/" + repo_;
    api_.Get(api + "/refs", [this](const httplib::Request& req, httplib::Response& res) {
      if (!authorized(req, res)) return;
      ++api_requests;
      res.set_content(nlohmann::json{{"branches", {{{"name", "main"}, {"ref", "refs/heads/main"}, {"targetCommit", kCommit}}}}, {"tags", nlohmann::json::array()}}.dump(),
                      "application/json");
    });
    api_.Get(api + "/tree/" + kCommit, [this](const httplib::Request& req, httplib::Response& res) {
      if (!authorized(req, res)) return;
      ++api_requests;
      nlohmann::json tree = nlohmann::json::array({{{"type", "directory"}, {"oid", std::string(40, 'a')}, {"size", 0}, {"path", "docs"}}});
      size_t first = 0, last = files_.size();
      if (tree_page_size > 0) {  // paginated as the hub does it, with a Link header to the next page
        first = req.has_param("cursor") ? std::stoul(req.get_param_value("cursor")) : 0;
        last = std::min(files_.size(), first + tree_page_size);
        if (last < files_.size())
          res.set_header("Link", "<" + endpoint() + req.path + "?recursive=true&cursor=" + std::to_string(last) + ">; rel=\"next\"");
      }
      for (size_t i = first; i < last; ++i) {
        const File& f = files_[i];
        nlohmann::json e = {{"type", "file"}, {"size", f.content.size()}, {"path", f.path}};
        if (f.lfs) {
          e["oid"] = std::string(40, 'b');
          e["lfs"] = {{"oid", f.listed_sha256}, {"size", f.content.size()}, {"pointerSize", 134}};
        } else {
          e["oid"] = std::string(40, 'c');
        }
        tree.push_back(e);
      }
      res.set_content(tree.dump(), "application/json");
    });
    api_.Get("/" + repo_ + "/resolve/" + kCommit + "/(.+)", [this](const httplib::Request& req, httplib::Response& res) {
      if (!authorized(req, res)) return;
      const std::string path = req.matches[1];
      for (size_t i = 0; i < files_.size(); ++i) {
        if (path != files_[i].path) continue;
        res.status = 302;
        res.set_header("Location", cdn_origin() + "/blobs/" + std::to_string(i));
        return;
      }
      res.status = 404;
    });
    cdn_.Get("/blobs/([0-9]+)", [this](const httplib::Request& req, httplib::Response& res) {
      {
        std::lock_guard<std::mutex> lock(mu_);
        ranges.push_back(req.get_header_value("Range"));
        if (req.has_header("Authorization")) cdn_saw_authorization = true;
      }
      const size_t i = std::stoul(req.matches[1]);
      if (downloads++ == 0 && cut_first_download_at > 0) {  // the connection drops part way
        const std::string& content = files_.at(i).content;
        res.set_content_provider(content.size(), "application/octet-stream", [this, &content](size_t offset, size_t, httplib::DataSink& sink) {
          if (offset >= cut_first_download_at) return false;
          sink.write(content.data() + offset, cut_first_download_at - offset);
          return true;
        });
        return;
      }
      res.set_content(files_.at(i).content, "application/octet-stream");  // httplib answers Range itself
    });
    api_port_ = api_.bind_to_any_port("127.0.0.1");
    cdn_port_ = cdn_.bind_to_any_port("127.0.0.1");
    api_thread_ = std::thread([this] { api_.listen_after_bind(); });
    cdn_thread_ = std::thread([this] { cdn_.listen_after_bind(); });
    while (!api_.is_running() || !cdn_.is_running()) std::this_thread::yield();
  }
  ~FakeHub() { stop(); }

  void stop() {
    api_.stop();
    cdn_.stop();
    if (api_thread_.joinable()) api_thread_.join();
    if (cdn_thread_.joinable()) cdn_thread_.join();
  }
  std::string endpoint() const { return "http://127.0.0.1:" + std::to_string(api_port_); }
  std::string cdn_origin() const { return "http://127.0.0.1:" + std::to_string(cdn_port_); }

  std::string required_token;  // when set, the API answers 401 without "Authorization: Bearer <it>"
  std::atomic<int> api_requests{0}, downloads{0};
  std::vector<std::string> ranges;  // the Range header of each download ("" : none)
  bool cdn_saw_authorization = false;
  size_t cut_first_download_at = 0;
  size_t tree_page_size = 0;          // > 0: the tree listing comes in pages of this many files  // > 0: the first download stops after this many bytes

 private:
  bool authorized(const httplib::Request& req, httplib::Response& res) {
    if (required_token.empty() || req.get_header_value("Authorization") == "Bearer " + required_token) return true;
    res.status = 401;
    res.set_content(R"({"error":"Invalid credentials in Authorization header"})", "application/json");
    return false;
  }

  std::string repo_;
  std::vector<File> files_;
  httplib::Server api_, cdn_;
  int api_port_ = 0, cdn_port_ = 0;
  std::thread api_thread_, cdn_thread_;
  std::mutex mu_;
};

}  // namespace zinc::test
