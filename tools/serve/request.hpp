#pragma once
// attend serve: the JSON requests of its API (docs/serve.md), parsed and
// checked before any work. A bad request is an HttpError carrying its status.
// Needs only nlohmann-json and models/data (the fuzz target `serve_request`
// builds this file without the HTTP library).
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/error.hpp"

namespace attend::tools::serve {

// A request the server refuses: the HTTP status and the message of its JSON body.
class HttpError : public Error {
 public:
  HttpError(int status, const std::string& message) : Error(message), status_(status) {}
  int status() const { return status_; }

 private:
  int status_;
};

inline constexpr std::size_t kMaxBodyBytes = std::size_t{1} << 20;  // 1 MiB
inline constexpr std::size_t kMaxItems = 64;                         // sentences per translate request

// The per-request options, under OpenNMT-py's names; unset: the model's default.
struct RequestOptions {
  std::optional<std::int64_t> beam_size, n_best;
  std::optional<bool> report_align, replace_unk;
  bool operator==(const RequestOptions&) const = default;
};

struct TranslateRequest {
  std::int64_t model = 0;
  std::vector<std::string> sources;
  RequestOptions options;
};

struct ExplainRequest {
  std::int64_t model = 0;
  std::string src;
  std::optional<std::string> ref;
  std::int64_t step = 0;
  RequestOptions options;
};

// POST /translator/translate: [{"src": ..., "id": ..., options...}, ...].
TranslateRequest parse_translate_request(std::string_view body);
// POST /explain: {"src": ..., "ref": ..., "model": ..., "step": ..., options...}.
ExplainRequest parse_explain_request(std::string_view body);

// {"status": "error", "error": message}
std::string error_body(const std::string& message);

}  // namespace attend::tools::serve
