// attend serve: parsing and checking the JSON of a request (request.hpp). Every
// check names the key and what was expected; nothing is translated before all pass.
#include "tools/serve/request.hpp"

#include <nlohmann/json.hpp>

#include "core/io/limits.hpp"
#include "models/data/tokenizer.hpp"

namespace attend::tools::serve {

namespace {

using Json = nlohmann::json;

[[noreturn]] void bad(const std::string& message) { throw HttpError(400, message); }

const char* type_of(const Json& j) { return j.type_name(); }

// The body as JSON: valid UTF-8 (said as such, not as a JSON error), then well-formed JSON.
Json parse_body(std::string_view body) {
  if (body.size() > kMaxBodyBytes)
    throw HttpError(413, fmt::format("the request body is {} bytes; at most {} are read", body.size(), kMaxBodyBytes));
  if (!valid_utf8(body)) bad("the request body is not valid UTF-8");
  Json j = Json::parse(body, nullptr, false);
  if (j.is_discarded()) bad("the request body is not well-formed JSON");
  return j;
}

// A sentence: a string of at most limits::kMaxLineBytes bytes.
std::string sentence(const Json& item, const char* key, const std::string& where) {
  const auto it = item.find(key);
  if (it == item.end()) bad(fmt::format("{}: \"{}\" is missing", where, key));
  if (!it->is_string()) bad(fmt::format("{}: \"{}\" must be a string, got {}", where, key, type_of(*it)));
  const std::string& s = it->get_ref<const std::string&>();
  if (s.size() > static_cast<std::size_t>(limits::kMaxLineBytes))
    throw HttpError(413, fmt::format("{}: \"{}\" is {} bytes; a sentence has at most {} (core/io/limits.hpp)", where,
                                     key, s.size(), limits::kMaxLineBytes));
  return s;
}

std::optional<std::int64_t> integer(const Json& item, const char* key, std::int64_t lo, std::int64_t hi,
                                    const std::string& where) {
  const auto it = item.find(key);
  if (it == item.end()) return std::nullopt;
  if (!it->is_number_integer()) bad(fmt::format("{}: \"{}\" must be an integer, got {}", where, key, type_of(*it)));
  // A number_unsigned above INT64_MAX reads as negative through get<int64_t>.
  if (it->is_number_unsigned() && it->get<std::uint64_t>() > static_cast<std::uint64_t>(hi))
    bad(fmt::format("{}: \"{}\" must be from {} to {}", where, key, lo, hi));
  const auto v = it->get<std::int64_t>();
  if (v < lo || v > hi) bad(fmt::format("{}: \"{}\" must be from {} to {}, got {}", where, key, lo, hi, v));
  return v;
}

std::optional<bool> boolean(const Json& item, const char* key, const std::string& where) {
  const auto it = item.find(key);
  if (it == item.end()) return std::nullopt;
  if (!it->is_boolean()) bad(fmt::format("{}: \"{}\" must be true or false, got {}", where, key, type_of(*it)));
  return it->get<bool>();
}

RequestOptions options_of(const Json& item, const std::string& where) {
  RequestOptions o;
  o.beam_size = integer(item, "beam_size", 1, limits::kMaxBeam, where);
  o.n_best = integer(item, "n_best", 1, limits::kMaxBeam, where);
  o.report_align = boolean(item, "report_align", where);
  o.replace_unk = boolean(item, "replace_unk", where);
  return o;
}

// An option another item gives must be the first item's: they apply to the whole request.
template <class T>
void same_option(const std::optional<T>& first, const std::optional<T>& other, const char* key, std::size_t i) {
  if (other && other != first)
    bad(fmt::format("item {}: \"{}\" differs from the first item's; the options apply to the whole request", i, key));
}

void check_keys(const Json& item, std::initializer_list<const char*> known, const std::string& where) {
  for (const auto& [key, value] : item.items()) {
    bool ok = false;
    for (const char* k : known) ok = ok || key == k;
    if (!ok) bad(fmt::format("{}: unknown key \"{}\" (docs/serve.md lists the keys)", where, key));
  }
}

}  // namespace

TranslateRequest parse_translate_request(std::string_view body) {
  const Json j = parse_body(body);
  if (!j.is_array()) bad(fmt::format("the request must be a JSON array of {{\"src\": ...}} objects, got {}", type_of(j)));
  if (j.empty()) bad("the request is an empty array: nothing to translate");
  if (j.size() > kMaxItems)
    throw HttpError(413, fmt::format("the request has {} items; at most {} are translated at once", j.size(), kMaxItems));
  TranslateRequest r;
  for (std::size_t i = 0; i < j.size(); ++i) {
    const Json& item = j[i];
    const std::string where = fmt::format("item {}", i);
    if (!item.is_object()) bad(fmt::format("{}: must be an object {{\"src\": ...}}, got {}", where, type_of(item)));
    r.sources.push_back(sentence(item, "src", where));
    const std::optional<std::int64_t> id = integer(item, "id", 0, INT64_MAX, where);
    const RequestOptions o = options_of(item, where);
    if (i == 0) {
      r.model = id.value_or(0);  // OpenNMT-py: the first item's id chooses the model
      r.options = o;
      continue;
    }
    if (id && *id != r.model) bad(fmt::format("{}: \"id\" {} differs from the first item's {}", where, *id, r.model));
    same_option(r.options.beam_size, o.beam_size, "beam_size", i);
    same_option(r.options.n_best, o.n_best, "n_best", i);
    same_option(r.options.report_align, o.report_align, "report_align", i);
    same_option(r.options.replace_unk, o.replace_unk, "replace_unk", i);
  }
  return r;
}

ExplainRequest parse_explain_request(std::string_view body) {
  const Json j = parse_body(body);
  if (!j.is_object()) bad(fmt::format("the request must be a JSON object {{\"src\": ...}}, got {}", type_of(j)));
  const std::string where = "explain";
  check_keys(j, {"src", "ref", "model", "step", "beam_size", "n_best"}, where);
  ExplainRequest r;
  r.src = sentence(j, "src", where);
  if (r.src.find_first_not_of(" \t\r\n") == std::string::npos) bad("explain: \"src\" is empty: nothing to explain");
  if (j.contains("ref")) {
    r.ref = sentence(j, "ref", where);
    if (r.ref->find_first_not_of(" \t\r\n") == std::string::npos)
      bad("explain: \"ref\" is empty (leave it out to explain the model's own translation)");
  }
  r.model = integer(j, "model", 0, INT64_MAX, where).value_or(0);
  r.step = integer(j, "step", 0, INT64_MAX, where).value_or(0);
  r.options = options_of(j, where);
  return r;
}

std::string error_body(const std::string& message) {
  // dump's `replace` handler: a message quoting invalid UTF-8 never throws.
  return Json{{"status", "error"}, {"error", message}}.dump(-1, ' ', false, Json::error_handler_t::replace);
}

}  // namespace attend::tools::serve
