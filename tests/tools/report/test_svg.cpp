// tools/report/svg: line charts and heatmaps (alone or side by side) are well-formed SVG
// with the promised parts.
#include <doctest/doctest.h>

#include <algorithm>
#include <string>

#include <fmt/format.h>

#include "core/error.hpp"
#include "tests/support/xml_check.hpp"
#include "tools/report/svg.hpp"

using namespace attend;
using namespace attend::tools;

TEST_CASE("nice ticks are round numbers covering the range") {
  CHECK(svg::nice_ticks(0, 100, 5) == std::vector<double>{0, 20, 40, 60, 80, 100});
  CHECK(svg::nice_ticks(0, 1, 5) == std::vector<double>{0, 0.2, 0.4, 0.6000000000000001, 0.8, 1});
  std::vector<double> t = svg::nice_ticks(3, 57, 6);
  CHECK(t.front() == 10);
  CHECK(t.back() == 50);
}

TEST_CASE("a line chart has axes, ticks, labels and one series per line") {
  svg::LineChart chart;
  chart.title = "BLEU <by> length";
  chart.x_label = "source length";
  chart.y_label = "BLEU";
  chart.series = {{"none", {5, 15, 25}, {80, 60, 20}}, {"additive", {5, 15, 25}, {99, 98, 97}, true, true}};
  std::string text = svg::line_chart(chart);
  testing::XmlSummary s = testing::check_xml(text);
  INFO(s.error);
  REQUIRE(s.ok);
  CHECK(s.elements["svg"] == 1);
  CHECK(s.classes["x-axis"] == 1);
  CHECK(s.classes["y-axis"] == 1);
  CHECK(s.classes["x-label"] == 1);
  CHECK(s.classes["y-label"] == 1);
  CHECK(s.classes["x-tick"] >= 3);
  CHECK(s.classes["y-tick"] >= 3);
  CHECK(s.classes["series"] == 2);
  CHECK(s.classes["legend"] == 2);
  CHECK(s.data_names == std::vector<std::string>{"none", "additive"});
  CHECK(s.elements["polyline"] == 2);
  CHECK(s.elements["circle"] == 3);  // markers on the second series only
  CHECK(text.find("BLEU &lt;by&gt; length") != std::string::npos);
  chart.series[0].y.pop_back();
  CHECK_THROWS_WITH_AS(svg::line_chart(chart), "svg::line_chart: series 'none' has 3 x and 2 y values", Error);
}

TEST_CASE("a heatmap has one cell per value, labels and a colour scale") {
  svg::Heatmap map;
  map.title = "attention";
  map.column_labels = {"the", "red", "car"};
  map.row_labels = {"la", "voiture", "rouge", "</s>"};
  map.values = {{0.9, 0.05, 0.05}, {0.1, 0.1, 0.8}, {0, 0.95, 0.05}, {0.3, 0.3, 0.4}};
  std::string text = svg::heatmap(map);
  testing::XmlSummary s = testing::check_xml(text);
  INFO(s.error);
  REQUIRE(s.ok);
  CHECK(s.classes["cell"] == 12);
  CHECK(s.classes["column-labels"] == 1);
  CHECK(s.classes["row-labels"] == 1);
  CHECK(s.classes["colour-scale"] == 1);
  CHECK(text.find("&lt;/s&gt;") != std::string::npos);
  // white at 0, dark blue at 1; diverging: white at 0, red positive, blue negative
  CHECK(svg::colour(map, 0.0) == "#ffffff");
  CHECK(svg::colour(map, 1.0) == "#08306b");
  map.diverging = true;
  map.lo = -1;
  map.hi = 1;
  CHECK(svg::colour(map, 0.0) == "#ffffff");
  CHECK(svg::colour(map, 1.0) == "#b2182b");
  CHECK(svg::colour(map, -1.0) == "#2166ac");
  map.values.pop_back();
  CHECK_THROWS_WITH_AS(svg::heatmap(map), "svg::heatmap: 3 x 3 values but 4 row and 3 column labels", Error);
}

namespace {
int count(const std::string& text, const std::string& what) {
  int n = 0;
  for (std::size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}
int svg_width(const std::string& text) {
  const std::size_t at = text.find("width=\"");
  return std::stoi(text.substr(at + 7));
}
}  // namespace

TEST_CASE("heatmaps side by side are one well-formed picture, each map whole in its own panel") {
  svg::Heatmap alpha, dalpha;
  alpha.title = "alpha";
  alpha.column_labels = {"the", "red", "car"};
  alpha.row_labels = {"la", "</s>"};
  alpha.values = {{0.9, 0.05, 0.05}, {0.3, 0.3, 0.4}};
  dalpha.title = "dL/dalpha";
  dalpha.column_labels = {"a", "b"};
  dalpha.row_labels = {"x"};
  dalpha.values = {{-0.02, 0.01}};
  dalpha.diverging = true;
  const std::string text = svg::heatmaps_side_by_side({alpha, dalpha}, 30);
  testing::XmlSummary s = testing::check_xml(text);
  INFO(s.error);
  REQUIRE(s.ok);
  CHECK(s.elements["svg"] == 1);
  CHECK(s.classes["panel"] == 2);
  CHECK(s.classes["colour-scale"] == 2);
  // One cell per value in each map: 6 in the first panel, 2 in the second.
  const std::size_t second = text.find("<g class=\"panel\"", text.find("<g class=\"panel\"") + 1);
  REQUIRE(second != std::string::npos);
  CHECK(count(text.substr(0, second), "class=\"cell\"") == 6);
  CHECK(count(text.substr(second), "class=\"cell\"") == 2);
  // Each panel is the map heatmap() draws alone, placed after the first one and the gap.
  const int first_width = svg_width(svg::heatmap(alpha)), second_width = svg_width(svg::heatmap(dalpha));
  CHECK(svg_width(text) == first_width + 30 + second_width);
  CHECK(text.find(fmt::format("translate({} 0)", first_width + 30)) != std::string::npos);
  CHECK(text.find("#2166ac") != std::string::npos);  // the diverging scale is filled in per map: -0.02 is full blue
  CHECK_THROWS_WITH_AS(svg::heatmaps_side_by_side({}), "svg::heatmaps_side_by_side: no heatmaps to draw", Error);
}
