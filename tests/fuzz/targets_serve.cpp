// The serve_request target: attend serve's request parser (tools/serve/request.cpp)
// on any bytes. The first byte chooses the endpoint (even: POST /translator/translate,
// odd: POST /explain); the rest is the body. A refusal must be an HttpError with a
// 4xx status, an accepted request must be within the limits, and every error body
// must be JSON, whatever bytes its message quotes.
#include <nlohmann/json.hpp>

#include "core/io/limits.hpp"
#include "models/data/tokenizer.hpp"
#include "tests/fuzz/targets.hpp"
#include "tools/serve/request.hpp"

namespace attend::fuzz {

namespace {

using namespace attend::tools::serve;

void check_sentence(const std::string& s) {
  if (s.size() > static_cast<std::size_t>(limits::kMaxLineBytes)) finding("a sentence over kMaxLineBytes was accepted");
  if (!valid_utf8(s)) finding("a sentence that is not valid UTF-8 was accepted");
}

void check_options(const RequestOptions& o) {
  if (o.beam_size && (*o.beam_size < 1 || *o.beam_size > limits::kMaxBeam)) finding("beam_size out of range accepted");
  if (o.n_best && (*o.n_best < 1 || *o.n_best > limits::kMaxBeam)) finding("n_best out of range accepted");
}

void check_error_body(const std::string& message) {
  const nlohmann::json j = nlohmann::json::parse(error_body(message), nullptr, false);
  if (j.is_discarded() || j["status"] != "error" || !j["error"].is_string()) finding("an error body is not JSON");
}

}  // namespace

int fuzz_serve_request(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const std::string_view body = as_text(data + 1, size - 1);
  try {
    if (data[0] % 2 == 0) {
      const TranslateRequest r = parse_translate_request(body);
      if (r.sources.empty() || r.sources.size() > kMaxItems) finding("a translate request of no or too many items");
      if (r.model < 0) finding("a negative model id was accepted");
      for (const std::string& s : r.sources) check_sentence(s);
      check_options(r.options);
    } else {
      const ExplainRequest r = parse_explain_request(body);
      check_sentence(r.src);
      if (r.ref) check_sentence(*r.ref);
      if (r.model < 0 || r.step < 0) finding("a negative model id or step was accepted");
      check_options(r.options);
    }
  } catch (const HttpError& e) {
    if (e.status() < 400 || e.status() > 499) finding("a refused request's status is not 4xx");
    check_error_body(e.what());
    expected(e);
  }
  check_error_body(std::string(body));  // a message may quote the body's bytes
  return 0;
}

}  // namespace attend::fuzz
