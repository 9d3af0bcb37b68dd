// attend serve (tools/serve/): its API answered by a server in a child process on
// 127.0.0.1 and a free port, checked against attend translate and
// attention_gradients, under concurrent clients, hostile requests and signals.
#include <arpa/inet.h>
#include <doctest/doctest.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <cmath>
#include <thread>

#include "core/io/file_io.hpp"
#include "models/data/tokenizer.hpp"
#include "models/eval/evaluation.hpp"
#include "tests/support/cli_child.hpp"
#include "tests/support/translate_cli.hpp"
#include "tests/tools/serve/serve_child.hpp"
#include "tools/explain/explain.hpp"
#include "tools/serve/server.hpp"

using namespace attend;
using namespace attend::testing;
using Json = nlohmann::json;

namespace {

const std::vector<std::string> kSentences = {"the red car sleeps", "a big dog sees the cat", "", "the cat"};

// Two models, additive (id 0) and none (id 1), in a scratch directory.
struct Models {
  Scratch scratch{"attend-test-serve"};
  std::string additive = scratch.path("additive"), none = scratch.path("none");
  Models() {
    write_model(additive, AttentionKind::Additive);
    write_model(none, AttentionKind::None);
  }
};

std::string translate_body(const std::vector<std::string>& sentences, const Json& options = Json::object()) {
  Json items = Json::array();
  for (const std::string& s : sentences) {
    Json item = options;
    item["src"] = s;
    items.push_back(item);
  }
  return items.dump();
}

// A Moses n-best line's fields: INDEX ||| TEXT ||| FEATURES ||| SCORE [||| ALIGNMENT].
std::vector<std::string> moses_fields(const std::string& line) {
  std::vector<std::string> fields;
  for (std::size_t at = 0, next; at <= line.size(); at = next + 5) {
    next = line.find(" ||| ", at);
    if (next == std::string::npos) next = line.size();
    fields.push_back(line.substr(at, next - at));
  }
  return fields;
}

// A TCP connection to 127.0.0.1:port (-1 if refused).
int connect_to(int port) {
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

std::vector<double> values(const Json& entry, const char* key = "data") { return entry[key].get<std::vector<double>>(); }

}  // namespace

TEST_CASE("serve translates as attend translate does, with OpenNMT-py's answer shape") {
  Models m;
  std::string input;
  for (const std::string& s : kSentences) input += s + "\n";
  const std::vector<std::string> plain = lines_of(run_translate({"--model", m.additive, "--quiet"}, &input));
  const std::vector<std::string> n_best = lines_of(run_translate(
      {"--model", m.additive, "--quiet", "--beam", "3", "--n-best", "2", "--alignments", "hard"}, &input));
  ServeChild server(m.scratch, {"--model", m.additive, "--model", m.none});
  httplib::Client c = server.client();

  Answer a = post(c, "/translator/translate", translate_body(kSentences, {{"id", 0}}));
  REQUIRE(a.status == 200);
  CHECK(a.content_type == "application/json");
  Json j = Json::parse(a.body);
  REQUIRE(j.size() == 1);  // one rank
  REQUIRE(j[0].size() == kSentences.size());
  for (std::size_t i = 0; i < kSentences.size(); ++i) {
    CHECK(j[0][i]["src"] == kSentences[i]);
    CHECK(j[0][i]["tgt"] == plain[i]);
    CHECK(j[0][i]["n_best"] == 1);
    CHECK(j[0][i]["pred_score"].is_number());
    CHECK_FALSE(j[0][i].contains("align"));
  }

  // Moses lines: INDEX ||| TEXT ||| FEATURES ||| SCORE ||| ALIGNMENT, two per sentence.
  a = post(c, "/translator/translate", translate_body(kSentences, {{"beam_size", 3}, {"n_best", 2}, {"report_align", true}}));
  REQUIRE(a.status == 200);
  j = Json::parse(a.body);
  REQUIRE(j.size() == 2);
  std::size_t line = 0;
  for (std::size_t i = 0; i < kSentences.size(); ++i) {
    if (kSentences[i].empty()) {  // translate writes one empty line; the server an empty answer per rank
      CHECK(j[0][i]["tgt"] == "");
      CHECK(j[1][i]["tgt"] == "");
      line += 1;
      continue;
    }
    for (std::size_t k = 0; k < 2; ++k, ++line) {
      INFO("sentence " << i << " rank " << k << ": " << n_best.at(line));
      const std::vector<std::string> fields = moses_fields(n_best.at(line));
      REQUIRE(fields.size() == 5);
      CHECK(fields[0] == std::to_string(i));
      CHECK(j[k][i]["tgt"] == fields[1]);
      CHECK(j[k][i]["pred_score"].get<double>() == doctest::Approx(std::stod(fields[3])).epsilon(1e-4));
      CHECK(j[k][i]["align"] == Json::array({fields[4]}));
      CHECK(j[k][i]["n_best"] == 2);
    }
  }

  a = get(c, "/translator/health");
  CHECK(a.status == 200);
  CHECK(Json::parse(a.body) == Json{{"status", "ok"}});
  a = get(c, "/translator/models");
  REQUIRE(a.status == 200);
  j = Json::parse(a.body);
  REQUIRE(j.size() == 2);
  CHECK(j[0]["model_id"] == 0);
  CHECK(j[0]["models"] == Json::array({m.additive}));
  CHECK(j[0]["attention"] == "additive");
  CHECK(j[0]["opt"]["beam_size"] == 1);
  CHECK(j[1]["model_id"] == 1);
  CHECK(j[1]["attention"] == "none");
  a = post(c, "/translator/translate", translate_body({"the cat"}, {{"id", 1}}));
  CHECK(a.status == 200);

  a = get(c, "/");
  CHECK(a.status == 200);
  CHECK(a.content_type.rfind("text/html", 0) == 0);
  CHECK(a.body.find("<html") != std::string::npos);
  CHECK(get(c, "/index.html").body == a.body);
  CHECK(server.stop().exit_code == 0);
}

TEST_CASE("/explain returns attention_gradients' alpha and dL/dalpha, the beam and one step's numbers") {
  Models m;
  const std::string source = "the red car sleeps", reference = "la voiture rouge dort";
  LoadedModel lm = load_model_dir(m.additive);
  const AttentionGradients with_ref = attention_gradients(*lm.model, tokenize(source, lm.tokenizer),
                                                          tokenize(reference, lm.tokenizer), lm.source_vocab,
                                                          lm.target_vocab);
  const TextTranslation greedy = translate_text(*lm.model, {source}, lm.source_vocab, lm.target_vocab, lm.tokenizer)[0];
  const AttentionGradients own = attention_gradients(*lm.model, tokenize(source, lm.tokenizer), greedy.output_tokens,
                                                     lm.source_vocab, lm.target_vocab);
  std::string input = source + "\n";
  const std::vector<std::string> beam = lines_of(run_translate({"--model", m.additive, "--quiet", "--beam", "3",
                                                                "--n-best", "3"}, &input));
  const Json explain_json = Json::parse(tools::explain_attention({.attention = "additive"}).json);
  ServeChild server(m.scratch, {"--model", m.additive, "--model", m.none});
  httplib::Client c = server.client();

  auto check_matrices = [](const Json& j, const AttentionGradients& g) {
    CHECK(j["source_tokens"] == g.source_tokens);
    CHECK(j["target_tokens"] == g.target_tokens);
    CHECK(j["loss"].get<double>() == doctest::Approx(g.loss));
    REQUIRE(j["alpha"].size() == g.alpha.size());
    for (std::size_t t = 0; t < g.alpha.size(); ++t)
      for (std::size_t k = 0; k < g.alpha[t].size(); ++k) {
        CHECK(j["alpha"][t][k].get<double>() == doctest::Approx(g.alpha[t][k]));
        CHECK(j["dalpha"][t][k].get<double>() == doctest::Approx(g.dalpha[t][k]));
      }
  };
  Answer a = post(c, "/explain", Json{{"src", source}, {"ref", reference}, {"step", 2}}.dump());
  REQUIRE(a.status == 200);
  Json j = Json::parse(a.body);
  CHECK(j["target"] == "reference");
  CHECK(j["attention"] == "additive");
  check_matrices(j, with_ref);

  // The step's numbers: named as attend explain --json names them, and consistent with each other.
  const Json& step = j["step"];
  CHECK(step["t"] == 2);
  CHECK(step["target_token"] == with_ref.target_tokens[2]);
  for (const auto& [key, value] : step["values"].items()) CHECK(explain_json["values"].contains(key));
  for (const auto& [key, value] : step["gradients"].items()) CHECK(explain_json["gradients"].contains(key));
  for (const char* key : {"H", "s", "q", "k", "t", "e", "alpha", "c", "h_tilde"}) CHECK(step["values"].contains(key));
  const std::vector<double> alpha = values(step["values"]["alpha"]), e = values(step["values"]["e"]);
  const std::vector<double> H = values(step["values"]["H"]), c_t = values(step["values"]["c"]);
  const std::vector<double> dalpha = values(step["gradients"]["alpha"], "analytic");
  const std::vector<double> de = values(step["gradients"]["e"], "analytic");
  const std::size_t S = alpha.size(), Hk = c_t.size();
  REQUIRE(S == with_ref.source_tokens.size());
  double z = 0, weighted = 0;
  for (double x : e) z += std::exp(x);
  for (std::size_t k = 0; k < S; ++k) weighted += alpha[k] * dalpha[k];
  for (std::size_t k = 0; k < S; ++k) {
    CHECK(alpha[k] == doctest::Approx(with_ref.alpha[2][k]));         // the matrix's row
    CHECK(alpha[k] == doctest::Approx(std::exp(e[k]) / z));            // α = softmax(e)
    CHECK(de[k] == doctest::Approx(alpha[k] * (dalpha[k] - weighted)));  // softmax's backward
    double norm = 0;
    for (std::size_t i = 0; i < Hk; ++i) norm += H[k * Hk + i] * H[k * Hk + i];
    CHECK(step["contribution_norms"][k].get<double>() == doctest::Approx(alpha[k] * std::sqrt(norm)));
    CHECK(j["state_norms"][k].get<double>() == doctest::Approx(std::sqrt(norm)));
  }
  for (std::size_t i = 0; i < Hk; ++i) {  // c = Σ_j α_j h_j
    double sum = 0;
    for (std::size_t k = 0; k < S; ++k) sum += alpha[k] * H[k * Hk + i];
    CHECK(c_t[i] == doctest::Approx(sum));
  }
  CHECK(step["p_target"].get<double>() == doctest::Approx(std::exp(-step["loss"].get<double>())));

  // Without a reference: the greedy translation's gradients, whatever the beam; the beam's hypotheses.
  a = post(c, "/explain", Json{{"src", source}, {"beam_size", 3}, {"n_best", 3}}.dump());
  REQUIRE(a.status == 200);
  j = Json::parse(a.body);
  CHECK(j["target"] == "greedy");
  check_matrices(j, own);
  REQUIRE(j["hypotheses"].size() == 3);
  for (std::size_t k = 0; k < 3; ++k) CHECK(j["hypotheses"][k]["tgt"] == moses_fields(beam.at(k)).at(1));
  CHECK(j["translation"] == j["hypotheses"][0]["tgt"]);
  CHECK(j["step"]["t"] == 0);

  a = post(c, "/explain", Json{{"src", source}, {"model", 1}}.dump());  // no attention: the translation only
  REQUIRE(a.status == 200);
  j = Json::parse(a.body);
  CHECK(j["attention"] == "none");
  CHECK(j["alpha"].is_null());
  CHECK(j["step"].is_null());
  CHECK(j["state_norms"].is_null());
  CHECK(j["translation"].is_string());
  CHECK(server.stop().exit_code == 0);
}

TEST_CASE("serve gives N concurrent clients the answers one client gets") {
  Models m;
  ServeChild server(m.scratch, {"--model", m.additive, "--model", m.none, "--workers", "4"});
  const std::vector<std::pair<std::string, std::string>> requests = {
      {"/translator/translate", translate_body(kSentences)},
      {"/translator/translate", translate_body(kSentences, {{"beam_size", 4}, {"n_best", 2}, {"report_align", true}})},
      {"/translator/translate", translate_body({"the cat sleeps"}, {{"id", 1}})},
      {"/explain", Json{{"src", "the red car sleeps"}, {"ref", "la voiture rouge"}, {"step", 1}}.dump()},
      {"/explain", Json{{"src", "a big dog sees the cat"}, {"beam_size", 2}}.dump()},
  };
  std::vector<std::string> alone;
  {
    httplib::Client c = server.client();
    for (const auto& [path, body] : requests) {
      Answer a = post(c, path, body);
      REQUIRE(a.status == 200);
      alone.push_back(a.body);
    }
  }
  constexpr int kClients = 8, kRounds = 3;
  std::vector<std::vector<std::string>> got(kClients);
  std::vector<std::thread> clients;
  for (int i = 0; i < kClients; ++i)
    clients.emplace_back([&, i] {
      httplib::Client c = server.client();
      for (int round = 0; round < kRounds; ++round)
        for (std::size_t r = 0; r < requests.size(); ++r) {
          const std::size_t k = (r + static_cast<std::size_t>(i)) % requests.size();  // clients interleave
          got[i].push_back(std::to_string(k) + ":" + post(c, requests[k].first, requests[k].second).body);
        }
    });
  for (std::thread& t : clients) t.join();
  for (int i = 0; i < kClients; ++i)
    for (const std::string& answer : got[i]) {
      const std::size_t k = std::stoul(answer.substr(0, answer.find(':')));
      CHECK(answer.substr(answer.find(':') + 1) == alone[k]);
    }
  CHECK(server.stop().exit_code == 0);
}

TEST_CASE("serve --coalesce: concurrent clients get the translations one client gets") {
  Models m;
  ServeChild server(m.scratch, {"--model", m.additive, "--workers", "8", "--coalesce"});
  const std::vector<std::string> bodies = {translate_body({kSentences[0], kSentences[1]}),
                                           translate_body({kSentences[3]}),
                                           translate_body({kSentences[1]}, {{"beam_size", 3}, {"n_best", 2}})};
  std::vector<Json> alone;
  {
    httplib::Client c = server.client();
    for (const std::string& body : bodies) alone.push_back(Json::parse(post(c, "/translator/translate", body).body));
  }
  constexpr int kClients = 8, kRounds = 4;
  std::vector<std::vector<std::pair<std::size_t, Answer>>> got(kClients);
  std::vector<std::thread> clients;
  for (int i = 0; i < kClients; ++i)
    clients.emplace_back([&, i] {
      httplib::Client c = server.client();
      for (int round = 0; round < kRounds; ++round) {
        const std::size_t k = static_cast<std::size_t>(i + round) % bodies.size();
        got[i].emplace_back(k, post(c, "/translator/translate", bodies[k]));
      }
    });
  for (std::thread& t : clients) t.join();
  for (const auto& answers : got)
    for (const auto& [k, a] : answers) {
      REQUIRE(a.status == 200);
      const Json j = Json::parse(a.body);
      REQUIRE(j.size() == alone[k].size());
      for (std::size_t rank = 0; rank < j.size(); ++rank) {
        REQUIRE(j[rank].size() == alone[k][rank].size());
        for (std::size_t i = 0; i < j[rank].size(); ++i) {
          CHECK(j[rank][i]["src"] == alone[k][rank][i]["src"]);
          CHECK(j[rank][i]["tgt"] == alone[k][rank][i]["tgt"]);
          CHECK(j[rank][i]["pred_score"].get<double>() ==
                doctest::Approx(alone[k][rank][i]["pred_score"].get<double>()).epsilon(1e-5));
        }
      }
    }
  CHECK(server.stop().exit_code == 0);
}

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
