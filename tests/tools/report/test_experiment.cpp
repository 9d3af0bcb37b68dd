// attend experiment --quick: every file is written, parses, and has the
// promised structure (axes, one series per model, one cell per weight).
#include <doctest/doctest.h>

#include <filesystem>

#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <unistd.h>

#include "core/io/file_io.hpp"
#include "tests/support/scratch.hpp"
#include "tests/support/xml_check.hpp"
#include "models/model_dir.hpp"
#include "tools/report/experiment.hpp"

using namespace attend;
namespace fs = std::filesystem;

TEST_CASE("the quick experiment writes well-formed figures, results and report") {
  tools::ExperimentOptions o;
  o.quick = true;
  o.train_seconds = 3;  // quicker still: the structure is what is tested here
  const attend::testing::Scratch scratch("attend-experiment");
  o.out_dir = scratch.path("experiment");
  nlohmann::json results = tools::run_experiment(o);
  auto text = [&](const char* name) { return read_file((fs::path(o.out_dir) / name).string()); };

  nlohmann::json saved = nlohmann::json::parse(text("results.json"));
  CHECK(saved["models"].size() == 3);
  for (const char* m : {"none", "additive", "dot"}) {
    CAPTURE(m);
    REQUIRE(saved["models"].contains(m));
    CHECK(saved["models"][m]["steps"].get<int>() > 0);
    CHECK(saved["models"][m]["buckets"].size() == 6);  // 1-10 ... 51-60
    for (const auto& b : saved["models"][m]["buckets"]) CHECK(b["sentences"].get<int>() == 6);
  }
  CHECK(saved["cost"].size() == 2 * 3 * 3);  // additive and none over m, t in {5, 10, 20}

  // The three trained models, as model directories that attend translate and attend serve load.
  for (const auto& [m, kind] : {std::pair{"none", AttentionKind::None}, std::pair{"additive", AttentionKind::Additive},
                                std::pair{"dot", AttentionKind::Dot}}) {
    CAPTURE(m);
    const LoadedModel loaded = load_model_dir((fs::path(o.out_dir) / "models" / m).string());
    CHECK(loaded.config.attention == kind);
    CHECK(loaded.source_vocab.size() > 4);
  }
  CHECK_FALSE(fs::exists(fs::path(o.out_dir) / "models" / "model.safetensors"));

  testing::XmlSummary bleu = testing::check_xml(text("bleu_vs_length.svg"));
  INFO(bleu.error);
  REQUIRE(bleu.ok);
  CHECK(bleu.classes["x-axis"] == 1);
  CHECK(bleu.classes["y-axis"] == 1);
  CHECK(bleu.data_names == std::vector<std::string>{"none", "additive", "dot"});

  testing::XmlSummary loss = testing::check_xml(text("loss.svg"));
  REQUIRE(loss.ok);
  CHECK(loss.classes["series"] == 6);  // train and validation per model
  testing::XmlSummary cost = testing::check_xml(text("cost.svg"));
  REQUIRE(cost.ok);
  CHECK(cost.elements["circle"] == 18);

  int heatmaps = 0;
  for (const auto& sample : saved["samples"]) {
    if (!sample.contains("attention")) continue;
    for (const auto& [model, weights] : sample["attention"].items()) {
      const std::string file = fmt::format("attention_{}_{}.svg", model, sample["label"].get<std::string>());
      testing::XmlSummary h = testing::check_xml(text(file.c_str()));
      INFO(file, h.error);
      REQUIRE(h.ok);
      // one cell per weight: (output tokens + </s>) x source tokens
      const std::size_t columns = weights.empty() ? 0 : weights[0].size();
      CHECK(h.classes["cell"] >= static_cast<int>(weights.size() * columns));
      CHECK(h.classes["colour-scale"] == 1);
      ++heatmaps;
    }
  }
  CHECK(heatmaps >= 3);
  testing::XmlSummary report = testing::check_xml(text("report.html"), /*html_void_tags=*/true);
  INFO(report.error);
  REQUIRE(report.ok);
  CHECK(report.elements["svg"] >= 6);  // figures inline, no network
  CHECK(report.elements["table"] >= 2);
  CHECK(report.elements["figcaption"] >= 6);
  CHECK(text("report.html").find("http://www.w3.org/2000/svg") != std::string::npos);
  CHECK(text("report.html").find("<script") == std::string::npos);
  testing::XmlSummary graph = testing::check_xml(text("step_graph.svg"));  // attend explain --graph's picture
  REQUIRE(graph.ok);
  CHECK(graph.classes["panel"] == 2);
  CHECK(text("report.html").find("additive_attention_step (H, v") != std::string::npos);  // the fused op, inline
  CHECK(text("report.html").find("Backprop through one step") != std::string::npos);
}
