// attend serve (tools/serve/): its API answered by a server in a child process on
// 127.0.0.1 and a free port, checked against attend translate and
// attention_gradients, and under concurrent clients (test_serve_hostile: hostile
// requests and signals).
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <thread>

#include "core/io/file_io.hpp"
#include "models/data/tokenizer.hpp"
#include "models/eval/evaluation.hpp"
#include "models/quantize/quantize_dir.hpp"
#include "tests/support/cli_child.hpp"
#include "tests/support/translate_cli.hpp"
#include "tests/tools/serve/serve_child.hpp"
#include "tools/explain/explain.hpp"

using namespace attend;
using namespace attend::testing;
using Json = nlohmann::json;

namespace {

const std::vector<std::string> kSentences = {"the red car sleeps", "a big dog sees the cat", "", "the cat"};

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

std::vector<double> values(const Json& entry, const char* key = "data") { return entry[key].get<std::vector<double>>(); }

// The numbers of step t in an /explain answer: named as `attend explain --json`
// names them, the row t of attention_gradients' α, and consistent with each other.
void check_step(const Json& j, const AttentionGradients& g, std::size_t t, const std::string& attention) {
  const Json& step = j["step"];
  CHECK(step["t"] == t);
  CHECK(step["target_token"] == g.target_tokens[t]);
  const Json explain_json = Json::parse(tools::explain_attention({.attention = attention}).json);
  for (const auto& [key, value] : step["values"].items()) CHECK(explain_json["values"].contains(key));
  for (const auto& [key, value] : step["gradients"].items()) CHECK(explain_json["gradients"].contains(key));
  for (const char* key : {"H", "s", "q", "k", "e", "alpha", "c", "h_tilde"}) CHECK(step["values"].contains(key));
  CHECK(step["values"].contains("t") == (attention == "additive"));  // t_j = tanh(k_j + q)
  CHECK(step["values"].contains("scale") == (attention != "additive"));
  const std::vector<double> alpha = values(step["values"]["alpha"]), e = values(step["values"]["e"]);
  const std::vector<double> H = values(step["values"]["H"]), c_t = values(step["values"]["c"]);
  const std::vector<double> dalpha = values(step["gradients"]["alpha"], "analytic");
  const std::vector<double> de = values(step["gradients"]["e"], "analytic");
  const std::size_t S = alpha.size(), Hk = c_t.size();
  REQUIRE(S == g.source_tokens.size());
  double z = 0, weighted = 0;
  for (double x : e) z += std::exp(x);
  for (std::size_t k = 0; k < S; ++k) weighted += alpha[k] * dalpha[k];
  for (std::size_t k = 0; k < S; ++k) {
    CHECK(alpha[k] == doctest::Approx(g.alpha[t][k]));         // the matrix's row
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
}

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
  CHECK(j[0]["copies"] == 1);
  CHECK(j[0]["weights"] == "float32");
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

  check_step(j, with_ref, 2, "additive");

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

TEST_CASE("/explain gives the step's numbers of dot and general attention too") {
  const Scratch scratch("attend-test-serve-kinds");
  const std::string source = "a big dog sees the cat", reference = "un grand chien voit le chat";
  std::vector<std::string> args;
  std::vector<AttentionGradients> expected;
  for (AttentionKind kind : {AttentionKind::Dot, AttentionKind::General}) {
    const std::string dir = scratch.path(std::string(attention_name(kind)));
    write_model(dir, kind);
    LoadedModel lm = load_model_dir(dir);
    expected.push_back(attention_gradients(*lm.model, tokenize(source, lm.tokenizer), tokenize(reference, lm.tokenizer),
                                           lm.source_vocab, lm.target_vocab));
    args.insert(args.end(), {"--model", dir});
  }
  ServeChild server(scratch, args);
  httplib::Client c = server.client();
  for (std::size_t id = 0; id < 2; ++id) {
    const std::string attention = id == 0 ? "dot" : "general";
    INFO(attention);
    const std::size_t last = expected[id].target_tokens.size() - 1;  // the step that predicts </s>
    const Answer a = post(c, "/explain", Json{{"src", source}, {"ref", reference}, {"model", id}, {"step", last}}.dump());
    REQUIRE(a.status == 200);
    const Json j = Json::parse(a.body);
    CHECK(j["attention"] == attention);
    CHECK(j["step"]["target_token"] == "</s>");
    check_step(j, expected[id], last, attention);
  }
  CHECK(server.stop().exit_code == 0);
}

TEST_CASE("serve gives N concurrent clients the answers one client gets, with one copy of a model or two") {
  Models m;
  std::vector<std::string> args = {"--model", m.additive, "--model", m.none, "--workers", "4"};
  SUBCASE("one copy") {}
  SUBCASE("two copies (--copies 2)") { args.insert(args.end(), {"--copies", "2", "--threads", "1"}); }
  ServeChild server(m.scratch, args);
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
    const Json models = Json::parse(get(c, "/translator/models").body);
    CHECK(models[0]["copies"] == (std::find(args.begin(), args.end(), "--copies") != args.end() ? 2 : 1));
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

TEST_CASE("serve --coalesce: concurrent clients get the translations one client gets, with one copy or two") {
  Models m;
  std::vector<std::string> args = {"--model", m.additive, "--workers", "8", "--coalesce"};
  SUBCASE("one copy") {}
  // A request another has taken into its batch may get a copy of its own meanwhile:
  // it must wait for its answers, not translate itself again.
  SUBCASE("two copies (--copies 2)") { args.insert(args.end(), {"--copies", "2", "--threads", "1"}); }
  ServeChild server(m.scratch, args);
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

TEST_CASE("serve --model-id numbers the models as an OpenNMT-py configuration does") {
  Models m;
  {
    ServeChild server(m.scratch, {"--model", m.additive, "--model", m.none, "--model-id", "100", "--model-id", "7"});
    httplib::Client c = server.client();
    Answer a = get(c, "/translator/models");
    REQUIRE(a.status == 200);
    const Json j = Json::parse(a.body);
    REQUIRE(j.size() == 2);
    CHECK(j[0]["model_id"] == 100);
    CHECK(j[0]["attention"] == "additive");
    CHECK(j[1]["model_id"] == 7);
    CHECK(j[1]["attention"] == "none");
    a = post(c, "/translator/translate", translate_body({"the cat"}, {{"id", 100}}));
    CHECK(a.status == 200);
    a = post(c, "/translator/translate", translate_body({"the cat"}, {{"id", 7}}));
    CHECK(a.status == 200);
    a = post(c, "/explain", Json{{"src", "the cat"}, {"model", 100}}.dump());
    CHECK(a.status == 200);
    a = post(c, "/translator/translate", translate_body({"the cat"}, {{"id", 0}}));  // no model 0 now
    CHECK(a.status == 404);
    CHECK(contains(Json::parse(a.body)["error"].get<std::string>(), "the ids are 100, 7"));
    CHECK(server.stop().exit_code == 0);
  }
  for (const auto& [ids, message] : std::vector<std::pair<std::vector<std::string>, std::string>>{
           {{"--model-id", "1"}, "1 --model-id given for 2 --model"},
           {{"--model-id", "3", "--model-id", "3"}, "--model-id 3 is given twice"},
           {{"--model-id", "-1", "--model-id", "2"}, "--model-id"}}) {
    std::vector<std::string> args = {"serve", "--model", m.additive, "--model", m.none, "--port", "0"};
    args.insert(args.end(), ids.begin(), ids.end());
    const CliResult r = attend_cli(m.scratch, args);
    CAPTURE(message);
    CHECK(r.exit_code != 0);
    CHECK(contains(r.err, message));
    CHECK(r.out == "");
  }
}

TEST_CASE("serve decodes an int8 model (attend quantize) as attend translate does, and says its weights are int8") {
  Models m;
  const std::string int8 = m.scratch.path("int8");
  quantize_model_dir(m.additive, int8, false);
  std::string input;
  for (const std::string& s : kSentences) input += s + "\n";
  const std::vector<std::string> want = lines_of(run_translate({"--model", int8, "--quiet"}, &input));
  ServeChild server(m.scratch, {"--model", int8});
  httplib::Client c = server.client();
  const Json models = Json::parse(get(c, "/translator/models").body);
  CHECK(models[0]["weights"] == "int8");
  const Answer a = post(c, "/translator/translate", translate_body(kSentences));
  REQUIRE(a.status == 200);
  const Json j = Json::parse(a.body);
  REQUIRE(j[0].size() == want.size());
  for (std::size_t i = 0; i < want.size(); ++i) CHECK(j[0][i]["tgt"] == want[i]);
  CHECK(server.stop().exit_code == 0);
}
