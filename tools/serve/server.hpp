#pragma once
// attend serve: the HTTP server around the Service (service.hpp): routes, a
// bounded worker pool, limits and timeouts, and a clean stop on SIGINT/SIGTERM.
#include <cstdio>
#include <string>

#include "tools/serve/service.hpp"

namespace attend::tools::serve {

struct ServerConfig {
  std::string host = "127.0.0.1";
  int port = 5000;            // 0: a free port
  bool allow_remote = false;  // needed for a host that is not a loopback address
  int workers = 8;            // threads answering requests
  int queue = 64;             // connections accepted and waiting for a worker
  int read_timeout = 10, write_timeout = 10;  // seconds, per connection
};

// True for 127.0.0.0/8, ::1 and "localhost".
bool is_loopback(const std::string& host);

// "http://HOST:PORT/", an IPv6 address in brackets.
std::string server_url(const std::string& host, int port);

// Binds, prints "listening on URL" to `out` once ready (flushed), and serves
// until SIGINT or SIGTERM: then it stops accepting, finishes the requests in
// flight and returns. Throws attend::Error when the address cannot be bound or a
// non-loopback host lacks allow_remote. While it runs, SIGINT and SIGTERM have
// its handler; the previous ones are restored when it returns.
void run_server(Service& service, const ServerConfig& config, std::FILE* out);

}  // namespace attend::tools::serve
