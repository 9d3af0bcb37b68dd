#pragma once
// `attend serve` in a forked child (tests/support/cli_child.hpp) on 127.0.0.1
// and a free port, read from its listening line, the models it serves, and the
// requests: what test_serve and test_serve_hostile share.
#include <arpa/inet.h>
#include <doctest/doctest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include <httplib.h>
#include <nlohmann/json.hpp>

#include "models/seq2seq.hpp"
#include "tests/support/cli_child.hpp"
#include "tests/support/translate_cli.hpp"

namespace attend::testing {

struct ServeChild {
  CliChild child;
  int port = -1;

  // Starts `attend serve ARGS --port 0` and waits (up to 60 s) for its listening line.
  ServeChild(const Scratch& s, std::vector<std::string> args) {
    args.insert(args.begin(), "serve");
    args.insert(args.end(), {"--port", "0"});
    std::filesystem::remove(s.path("stdout.txt"));  // not an earlier server's line
    child = start_attend_cli(s, args, "", 300);
    const std::string prefix = "listening on http://127.0.0.1:";
    for (int i = 0; i < 600 && port < 0; ++i) {
      const std::string out = slurp(child.out);
      const std::size_t at = out.find(prefix);
      if (at != std::string::npos && out.find("/\n", at) != std::string::npos) {
        port = std::stoi(out.substr(at + prefix.size()));
        break;
      }
      int status = 0;
      if (::waitpid(child.pid, &status, WNOHANG) == child.pid) {
        child.pid = -1;
        FAIL("attend serve ended before listening: " << slurp(child.err));
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    REQUIRE(port > 0);
    CHECK(slurp(child.out) == prefix + std::to_string(port) + "/\n");  // exactly one line
  }
  ~ServeChild() {
    if (child.pid > 0) {
      ::kill(child.pid, SIGKILL);
      ::waitpid(child.pid, nullptr, 0);
    }
  }
  ServeChild(const ServeChild&) = delete;
  ServeChild& operator=(const ServeChild&) = delete;

  httplib::Client client() const {
    httplib::Client c("127.0.0.1", port);
    c.set_read_timeout(120, 0);
    return c;
  }
  // Sends `signal` and waits for the server to end.
  CliResult stop(int signal = SIGTERM) {
    ::kill(child.pid, signal);
    CliResult r = wait_attend_child(child);
    child.pid = -1;
    return r;
  }
};

struct Answer {
  int status = 0;  // 0: no answer
  std::string body;
  std::string content_type;
};

// Two models, additive (id 0) and none (id 1), in a scratch directory.
struct Models {
  Scratch scratch{"attend-test-serve"};
  std::string additive = scratch.path("additive"), none = scratch.path("none");
  Models() {
    write_model(additive, AttentionKind::Additive);
    write_model(none, AttentionKind::None);
  }
};

// A POST /translator/translate body: one item per sentence, each with `options`.
inline std::string translate_body(const std::vector<std::string>& sentences,
                                  const nlohmann::json& options = nlohmann::json::object()) {
  nlohmann::json items = nlohmann::json::array();
  for (const std::string& s : sentences) {
    nlohmann::json item = options;
    item["src"] = s;
    items.push_back(item);
  }
  return items.dump();
}

// A TCP connection to 127.0.0.1:port (-1 if refused).
inline int connect_to(int port) {
  const int sock = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<std::uint16_t>(port));
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(sock, reinterpret_cast<const sockaddr*>(&address), sizeof address) != 0) {
    ::close(sock);
    return -1;
  }
  return sock;
}

inline Answer post(httplib::Client& c, const std::string& path, const std::string& body) {
  auto r = c.Post(path.c_str(), body, "application/json");
  if (!r) return {};
  return {r->status, r->body, r->get_header_value("Content-Type")};
}

inline Answer get(httplib::Client& c, const std::string& path) {
  auto r = c.Get(path.c_str());
  if (!r) return {};
  return {r->status, r->body, r->get_header_value("Content-Type")};
}

}  // namespace attend::testing
