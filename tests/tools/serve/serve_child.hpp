#pragma once
// `attend serve` in a forked child (tests/support/cli_child.hpp) on 127.0.0.1
// and a free port, read from its listening line; what the serve tests share.
#include <doctest/doctest.h>
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

#include "tests/support/cli_child.hpp"

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
