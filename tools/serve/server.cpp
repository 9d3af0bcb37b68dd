// attend serve: the HTTP side (server.hpp). cpp-httplib (Debian libcpp-httplib-dev)
// parses HTTP; every answer, errors included, is JSON but the page's files.
#include "tools/serve/server.hpp"

#include <httplib.h>
#include <fcntl.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <thread>

#include "tools/serve/page.hpp"
#include "tools/serve/request.hpp"

namespace attend::tools::serve {

namespace {

constexpr const char* kJson = "application/json";

// httplib's ThreadPool queues without bound; this one holds at most `most`
// waiting connections: past them enqueue blocks, so the accept loop stops
// accepting and the kernel's listen backlog holds the rest.
class BoundedPool : public httplib::TaskQueue {
 public:
  BoundedPool(int workers, int most) : most_(static_cast<std::size_t>(most)) {
    for (int i = 0; i < workers; ++i) threads_.emplace_back([this] { work(); });
  }
  void enqueue(std::function<void()> fn) override {
    std::unique_lock<std::mutex> lock(mutex_);
    room_.wait(lock, [&] { return jobs_.size() < most_; });
    jobs_.push_back(std::move(fn));
    ready_.notify_one();
  }
  // Finishes the queued connections, then ends the workers.
  void shutdown() override {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stopping_ = true;
    }
    ready_.notify_all();
    for (std::thread& t : threads_) t.join();
  }

 private:
  void work() {
    for (;;) {
      std::function<void()> fn;
      {
        std::unique_lock<std::mutex> lock(mutex_);
        ready_.wait(lock, [&] { return stopping_ || !jobs_.empty(); });
        if (jobs_.empty()) return;  // stopping, nothing left
        fn = std::move(jobs_.front());
        jobs_.pop_front();
        room_.notify_one();
      }
      fn();
    }
  }
  std::size_t most_;
  std::vector<std::thread> threads_;
  std::deque<std::function<void()>> jobs_;
  std::mutex mutex_;
  std::condition_variable ready_, room_;
  bool stopping_ = false;
};

void answer_error(httplib::Response& res, int status, const std::string& message) {
  res.status = status;
  res.set_content(error_body(message), kJson);
}

// A JSON endpoint: its answer, or the error it throws as a JSON error body.
httplib::Server::Handler json_endpoint(std::function<std::string(std::string_view)> answer) {
  return [answer = std::move(answer)](const httplib::Request& req, httplib::Response& res) {
    try {
      res.set_content(answer(req.body), kJson);
    } catch (const HttpError& e) {
      answer_error(res, e.status(), e.what());
    } catch (const Error& e) {  // the request's own mistake, found by attend's checks
      answer_error(res, 400, e.what());
    } catch (const std::bad_alloc&) {
      answer_error(res, 503, "out of memory answering this request");
    } catch (const std::exception& e) {
      answer_error(res, 500, e.what());
    }
  };
}

void add_routes(httplib::Server& server, Service& service) {
  server.Post("/translator/translate", json_endpoint([&](std::string_view b) { return service.translate(b); }));
  server.Post("/explain", json_endpoint([&](std::string_view b) { return service.explain(b); }));
  server.Get("/translator/health", [](const httplib::Request&, httplib::Response& res) {
    res.set_content(R"({"status":"ok"})", kJson);
  });
  server.Get("/translator/models", [&](const httplib::Request&, httplib::Response& res) {
    res.set_content(service.models(), kJson);
  });
  for (const PageFile& f : page_files()) {
    auto serve_file = [f](const httplib::Request&, httplib::Response& res) {
      res.set_content(f.bytes.data(), f.bytes.size(), std::string(f.content_type).c_str());
    };
    server.Get("/" + std::string(f.name), serve_file);
    if (f.name == "index.html") server.Get("/", serve_file);
  }
  auto wrong_method = [](const char* allowed) {
    return [allowed](const httplib::Request& req, httplib::Response& res) {
      answer_error(res, 405, fmt::format("{} {}: this path answers {} only", req.method, req.path, allowed));
      res.set_header("Allow", allowed);
    };
  };
  server.Get("/translator/translate", wrong_method("POST"));
  server.Get("/explain", wrong_method("POST"));
  server.Post("/translator/health", wrong_method("GET"));
  server.Post("/translator/models", wrong_method("GET"));
  // httplib's own refusals (404, 413 over the payload limit, 400) get a JSON body too.
  server.set_error_handler([](const httplib::Request& req, httplib::Response& res) {
    if (!res.body.empty()) return;
    const std::string message = res.status == 404   ? fmt::format("no such path: {} {}", req.method, req.path)
                                : res.status == 413 ? fmt::format("the request body is over {} bytes", kMaxBodyBytes)
                                                    : fmt::format("HTTP status {}", res.status);
    res.set_content(error_body(message), kJson);
  });
}

// SIGINT and SIGTERM reach whichever thread does not block them (OpenBLAS
// starts its own), so their handler only writes a byte to a pipe: the one thing
// it may safely do. A watcher thread reads it and stops the server.
int stop_pipe[2] = {-1, -1};

extern "C" void on_stop_signal(int) {
  const int saved = errno;
  [[maybe_unused]] const ssize_t n = ::write(stop_pipe[1], "s", 1);
  errno = saved;
}

// Installs the handler for SIGINT and SIGTERM, and ignores SIGPIPE, while alive;
// the previous dispositions after.
class StopSignals {
 public:
  StopSignals() {
    if (::pipe2(stop_pipe, O_CLOEXEC) != 0) fail("serve: cannot create a pipe: {}", std::strerror(errno));
    struct sigaction action {};
    action.sa_handler = on_stop_signal;
    sigemptyset(&action.sa_mask);
    ::sigaction(SIGINT, &action, &previous_[0]);
    ::sigaction(SIGTERM, &action, &previous_[1]);
    // A client that hangs up while its answer is written: an EPIPE for that
    // connection, not the end of the server.
    struct sigaction ignore {};
    ignore.sa_handler = SIG_IGN;
    sigemptyset(&ignore.sa_mask);
    ::sigaction(SIGPIPE, &ignore, &previous_[2]);
  }
  ~StopSignals() {
    ::sigaction(SIGINT, &previous_[0], nullptr);
    ::sigaction(SIGTERM, &previous_[1], nullptr);
    ::sigaction(SIGPIPE, &previous_[2], nullptr);
    ::close(stop_pipe[0]);
    ::close(stop_pipe[1]);
    stop_pipe[0] = stop_pipe[1] = -1;
  }
  StopSignals(const StopSignals&) = delete;
  StopSignals& operator=(const StopSignals&) = delete;
  // Wakes the watcher without a signal, once the server has stopped by itself.
  static void wake() { [[maybe_unused]] const ssize_t n = ::write(stop_pipe[1], "w", 1); }

 private:
  struct sigaction previous_[3] {};
};

void watch_signals(httplib::Server& server, const std::atomic<bool>& done) {
  char byte = 0;
  while (!done.load()) {
    const ssize_t n = ::read(stop_pipe[0], &byte, 1);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0 || done.load()) return;
    // stop() does nothing before listen_after_bind has started: a signal that early waits for it.
    while (!server.is_running() && !done.load()) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    server.stop();
    return;
  }
}

// The pool, the limits and the sockets' options; `listening` gets the listening socket.
void configure(httplib::Server& server, const ServerConfig& config, int& listening) {
  server.new_task_queue = [&config] { return new BoundedPool(config.workers, config.queue); };
  server.set_payload_max_length(kMaxBodyBytes);
  server.set_read_timeout(config.read_timeout, 0);
  server.set_write_timeout(config.write_timeout, 0);
  server.set_keep_alive_timeout(2);
  server.set_keep_alive_max_count(100);
  // httplib listens with a backlog of 5: clients connecting at once past it wait for
  // a SYN retransmission (a second). Its socket is kept to listen again with `queue`.
  server.set_socket_options([&listening](int sock) {
    const int yes = 1;
    ::setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
    listening = sock;
  });
  // httplib writes an answer's headers and body apart: with Nagle's algorithm the
  // body waits for the client's delayed ACK (about 40 ms) on every keep-alive request.
  server.set_tcp_nodelay(true);
}

}  // namespace

bool is_loopback(const std::string& host) {
  if (host == "localhost" || host == "::1" || host == "[::1]") return true;
  in_addr v4{};  // an IPv4 address in 127.0.0.0/8, written as one (not a name like 127.example.com)
  return ::inet_pton(AF_INET, host.c_str(), &v4) == 1 && (ntohl(v4.s_addr) >> 24) == 127;
}

std::string server_url(const std::string& host, int port) {
  const bool v6 = host.find(':') != std::string::npos && host.front() != '[';
  return fmt::format("http://{}{}{}:{}/", v6 ? "[" : "", host, v6 ? "]" : "", port);
}

void run_server(Service& service, const ServerConfig& config, std::FILE* out) {
  if (!is_loopback(config.host) && !config.allow_remote)
    fail("serve: --host {} is not a loopback address: anyone who can reach it could use the models; give "
         "--allow-remote to mean it",
         config.host);
  if (!is_loopback(config.host))
    fmt::print(stderr, "warning: serving on {}: any machine that reaches this address can use the server, with no "
                       "authentication and no TLS (docs/serve.md, Security)\n", config.host);
  const StopSignals stop_signals;
  httplib::Server server;
  int listening = -1;
  configure(server, config, listening);
  add_routes(server, service);
  const std::string host = config.host == "[::1]" ? "::1" : config.host;
  const int port = config.port == 0 ? server.bind_to_any_port(host) : (server.bind_to_port(host, config.port) ? config.port : -1);
  if (port < 0)
    fail("serve: cannot listen on {} port {} (in use, or not an address of this machine)", config.host, config.port);
  if (listening >= 0) ::listen(listening, config.queue);  // on Linux, a new backlog for the listening socket
  fmt::print(out, "listening on {}\n", server_url(host, port));
  std::fflush(out);
  std::atomic<bool> done{false};
  std::thread watcher(watch_signals, std::ref(server), std::cref(done));
  server.listen_after_bind();  // returns once stopped, the requests in flight answered
  done = true;
  StopSignals::wake();
  watcher.join();
}

}  // namespace attend::tools::serve
