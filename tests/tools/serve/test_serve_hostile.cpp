// attend serve (tools/serve/) against hostile requests and clients, signals, and
// addresses that are not loopback; test_serve checks what it answers.
#include <doctest/doctest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <string>
#include <thread>
#include <vector>

#include "tests/support/cli_child.hpp"
#include "tests/support/translate_cli.hpp"
#include "tests/tools/serve/serve_child.hpp"
#include "tools/serve/server.hpp"

using namespace attend;
using namespace attend::testing;
using Json = nlohmann::json;

TEST_CASE("serve answers hostile requests with a 4xx JSON error and keeps serving") {
  Models m;
  ServeChild server(m.scratch, {"--model", m.additive, "--model", m.none});
  httplib::Client c = server.client();
  const std::string invalid_utf8 = "[{\"src\": \"caf\xc3\x28\"}]";
  std::string long_words;  // within 65536 bytes, but too many tokens to decode within the memory limit
  for (int i = 0; i < 30000; ++i) long_words += "a ";
  struct Case {
    const char* what;
    std::string path, body;
    int status;
  };
  const std::vector<Case> cases = {
      {"malformed JSON", "/translator/translate", "[{\"src\": \"the cat\"", 400},
      {"not JSON at all", "/translator/translate", "src=the+cat", 400},
      {"an object, not an array", "/translator/translate", R"({"src": "the cat"})", 400},
      {"an empty array", "/translator/translate", "[]", 400},
      {"an item that is not an object", "/translator/translate", R"(["the cat"])", 400},
      {"src missing", "/translator/translate", R"([{"id": 0}])", 400},
      {"src a number", "/translator/translate", R"([{"src": 5}])", 400},
      {"id a string", "/translator/translate", R"([{"src": "the cat", "id": "0"}])", 400},
      {"id negative", "/translator/translate", R"([{"src": "the cat", "id": -1}])", 400},
      {"id huge", "/translator/translate", R"([{"src": "the cat", "id": 18446744073709551615}])", 400},
      {"ids that differ", "/translator/translate", R"([{"src": "a", "id": 0}, {"src": "b", "id": 1}])", 400},
      {"invalid UTF-8", "/translator/translate", invalid_utf8, 400},
      {"unknown model id", "/translator/translate", R"([{"src": "the cat", "id": 7}])", 404},
      {"beam_size 0", "/translator/translate", R"([{"src": "the cat", "beam_size": 0}])", 400},
      {"beam_size over the limit", "/translator/translate", R"([{"src": "the cat", "beam_size": 100000}])", 400},
      {"beam_size a float", "/translator/translate", R"([{"src": "the cat", "beam_size": 2.5}])", 400},
      {"n_best over beam_size", "/translator/translate", R"([{"src": "the cat", "beam_size": 2, "n_best": 3}])", 400},
      {"report_align a string", "/translator/translate", R"([{"src": "the cat", "report_align": "yes"}])", 400},
      {"report_align without attention", "/translator/translate", R"([{"src": "the cat", "id": 1, "report_align": true}])", 400},
      {"options that differ", "/translator/translate", R"([{"src": "a", "beam_size": 2}, {"src": "b", "beam_size": 3}])", 400},
      {"a sentence too long to decode", "/translator/translate", translate_body({long_words}), 400},
      {"a sentence over 65536 bytes", "/translator/translate", translate_body({std::string(70000, 'a')}), 413},
      {"65 items", "/translator/translate", translate_body(std::vector<std::string>(65, "the cat")), 413},
      {"a body over 1 MiB", "/translator/translate", std::string(2 << 20, ' '), 413},
      {"arrays nested 400000 deep", "/translator/translate", std::string(400000, '[') + std::string(400000, ']'), 400},
      {"objects nested 200000 deep, unclosed", "/explain", [] {
         std::string deep;
         for (int i = 0; i < 200000; ++i) deep += "{\"a\":";
         return deep;
       }(), 400},
      {"explain: an array", "/explain", R"([{"src": "the cat"}])", 400},
      {"explain: src empty", "/explain", R"({"src": "  "})", 400},
      {"explain: ref empty", "/explain", R"({"src": "the cat", "ref": ""})", 400},
      {"explain: step out of range", "/explain", R"({"src": "the cat", "ref": "le chat", "step": 3})", 400},
      {"explain: step a string", "/explain", R"({"src": "the cat", "step": "1"})", 400},
      {"explain: an unknown key", "/explain", R"({"src": "the cat", "sep": 1})", 400},
      {"explain: unknown model", "/explain", R"({"src": "the cat", "model": 2})", 404},
      {"an unknown path", "/translator/nothing", "[]", 404},
  };
  for (const Case& k : cases) {
    INFO(k.what);
    const Answer a = post(c, k.path, k.body);
    CHECK(a.status == k.status);
    CHECK(a.content_type == "application/json");
    const Json j = Json::parse(a.body, nullptr, false);
    REQUIRE_FALSE(j.is_discarded());
    CHECK(j["status"] == "error");
    CHECK(j["error"].is_string());
    CHECK_FALSE(j["error"].get<std::string>().empty());
  }
  Answer a = get(c, "/translator/translate");
  CHECK(a.status == 405);
  CHECK(Json::parse(a.body)["status"] == "error");
  a = get(c, "/no/such/page");
  CHECK(a.status == 404);
  CHECK(Json::parse(a.body)["status"] == "error");
  // Clients that hang up before their answer, or connect and send nothing, while others are answered.
  const std::string many = translate_body(std::vector<std::string>(64, "a big dog sees the red car"));
  const std::string request = "POST /translator/translate HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                              "Content-Length: " + std::to_string(many.size()) + "\r\n\r\n" + many;
  std::vector<int> silent;
  for (int i = 0; i < 3; ++i) silent.push_back(connect_to(server.port));
  for (int i = 0; i < 20; ++i) {
    const int sock = connect_to(server.port);
    REQUIRE(sock >= 0);
    CHECK(::send(sock, request.data(), request.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(request.size()));
    ::close(sock);
  }
  CHECK(post(c, "/translator/translate", translate_body({"the cat"})).status == 200);
  for (int sock : silent) ::close(sock);
  CHECK(get(c, "/translator/health").status == 200);  // still serving
  CHECK(post(c, "/translator/translate", translate_body({"the cat"})).status == 200);
  CHECK(server.stop().exit_code == 0);
}

TEST_CASE("SIGINT and SIGTERM stop serve cleanly, and a remote host needs --allow-remote") {
  Models m;
  for (int signal : {SIGINT, SIGTERM}) {
    INFO("signal " << signal);
    ServeChild server(m.scratch, {"--model", m.additive});
    httplib::Client c = server.client();
    CHECK(post(c, "/translator/translate", translate_body({"the cat"})).status == 200);
    const CliResult r = server.stop(signal);
    CHECK(r.exit_code == 0);
    CHECK(r.signal == 0);
    CHECK(r.err == "");
  }
  // A signal while requests are in flight: each is answered whole, or refused (no
  // connection), never cut short; the server still exits 0.
  {
    ServeChild server(m.scratch, {"--model", m.additive, "--workers", "4"});
    const std::string body = translate_body(std::vector<std::string>(64, "a big dog sees the red car"), {{"beam_size", 8}});
    std::vector<Answer> answers(4);
    std::vector<std::thread> clients;
    for (Answer& a : answers)
      clients.emplace_back([&server, &body, &a] {
        httplib::Client c = server.client();
        a = post(c, "/translator/translate", body);
      });
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    const CliResult r = server.stop(SIGTERM);
    for (std::thread& t : clients) t.join();
    CHECK(r.exit_code == 0);
    for (const Answer& a : answers) {
      CHECK((a.status == 0 || a.status == 200));
      if (a.status == 200) CHECK(Json::parse(a.body)[0].size() == 64);
    }
  }
  const CliResult r = attend_cli(m.scratch, {"serve", "--model", m.additive, "--host", "0.0.0.0", "--port", "0"});
  CHECK(r.exit_code != 0);
  CHECK(contains(r.err, "--allow-remote"));
  CHECK(r.out == "");
}

TEST_CASE("serve: only loopback addresses count as loopback, and URLs bracket IPv6") {
  using tools::serve::is_loopback;
  for (const char* host : {"127.0.0.1", "127.5.6.7", "::1", "[::1]", "localhost"}) CHECK_MESSAGE(is_loopback(host), host);
  for (const char* host : {"0.0.0.0", "10.0.0.1", "127.example.com", "128.0.0.1", "::", "", "localhost.evil"})
    CHECK_MESSAGE(!is_loopback(host), host);
  CHECK(tools::serve::server_url("127.0.0.1", 80) == "http://127.0.0.1:80/");
  CHECK(tools::serve::server_url("::1", 8080) == "http://[::1]:8080/");
}
