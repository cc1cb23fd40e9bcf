// zinc serve --ssl-cert-file / --ssl-key-file: https with a self-signed certificate (made with the
// openssl command), checked by a client that trusts it; a plain-http request is not answered.
#include <gtest/gtest.h>

#include <httplib.h>

#include <chrono>
#include <fstream>
#include <regex>
#include <sstream>
#include <thread>

#include "support/test_data.h"

namespace zinc::test {
namespace {

std::string slurp(const std::string& path) {
  std::ifstream in(path);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

TEST(ServeHttps, AnswersOverTlsWithTheGivenCertificate) {
  ZINC_REQUIRE_TEST_DATA();
  const std::string cert = temp_path("cert.pem"), key = temp_path("key.pem"), log = temp_path("https.log");
  std::string out;
  ASSERT_EQ(run_command("openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=localhost -addext subjectAltName=IP:127.0.0.1 -keyout " +
                            key + " -out " + cert,
                        &out),
            0)
      << out;
  ASSERT_EQ(run_command("sh -c '" + zinc_binary() + " serve -m " + data_path("models/stories260K.gguf") + " --port 0 -t 1 --ssl-cert-file " +
                            cert + " --ssl-key-file " + key + " >" + log + " 2>&1 & echo $! >" + log + ".pid'",
                        &out),
            0);
  std::smatch m;
  std::string text;
  for (int i = 0; i < 300 && !std::regex_search(text, m, std::regex("https://127\\.0\\.0\\.1:([0-9]+)/")); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    text = slurp(log);
  }
  ASSERT_FALSE(m.empty()) << text;
  const int port = std::stoi(m[1]);

  httplib::SSLClient tls("127.0.0.1", port);
  tls.set_ca_cert_path(cert.c_str());
  tls.enable_server_certificate_verification(true);
  auto health = tls.Get("/health");
  ASSERT_TRUE(health) << httplib::to_string(health.error());
  EXPECT_EQ(health->status, 200);
  auto done = tls.Post("/v1/completions", R"({"prompt":"Once","max_tokens":4,"temperature":0})", "application/json");
  ASSERT_TRUE(done);
  EXPECT_EQ(done->status, 200);
  EXPECT_NE(done->body.find("\"text_completion\""), std::string::npos) << done->body;

  httplib::Client plain("127.0.0.1", port);
  plain.set_read_timeout(2);
  auto refused = plain.Get("/health");
  EXPECT_TRUE(!refused || refused->status != 200);

  EXPECT_EQ(run_command("kill -TERM $(cat " + log + ".pid)", &out), 0);
}

TEST(ServeHttps, BadCertificatesFailWithOneLine) {
  ZINC_REQUIRE_TEST_DATA();
  const std::string model = data_path("models/stories260K.gguf"), junk = temp_path("junk.pem");
  write_file(junk, "not a certificate", 17);
  std::string out;
  EXPECT_EQ(run_command(zinc_binary() + " serve -m " + model + " --port 0 --ssl-cert-file " + junk, &out), 1);
  EXPECT_EQ(out, "error: https needs both --ssl-cert-file and --ssl-key-file\n");
  EXPECT_EQ(run_command(zinc_binary() + " serve -m " + model + " --port 0 --ssl-cert-file /nonexistent.pem --ssl-key-file " + junk, &out), 1);
  EXPECT_EQ(out, "error: /nonexistent.pem: cannot open\n");
  EXPECT_EQ(run_command(zinc_binary() + " serve -m " + model + " --port 0 -t 1 --ssl-cert-file " + junk + " --ssl-key-file " + junk, &out), 1);
  EXPECT_NE(out.find("\nerror: " + junk + ", " + junk + ": cannot load the certificate and its private key"), std::string::npos) << out;
}

}  // namespace
}  // namespace zinc::test
