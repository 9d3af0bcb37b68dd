#pragma once
// Pictures as SVG text, written by attend itself (no plotting dependency):
// line charts with axes, ticks, labels and a legend, and heatmaps with token
// labels and a colour scale. The output is valid XML that opens in a browser
// and can be inlined into an HTML page.
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace attend::tools::svg {

struct Series {
  std::string name;
  std::vector<double> x, y;
  bool line = true;      // join the points
  bool markers = false;  // draw a dot at each point
};

struct LineChart {
  std::string title, x_label, y_label;
  std::vector<Series> series;
  std::optional<double> y_min, y_max, x_min, x_max;  // default: from the data
  int width = 640, height = 400;
};
std::string line_chart(const LineChart& chart);

struct Heatmap {
  std::string title;
  std::vector<std::string> column_labels;  // e.g. source tokens, drawn across the top
  std::vector<std::string> row_labels;     // e.g. output tokens, drawn down the left
  std::vector<std::vector<double>> values;  // [row][column]
  std::string column_axis, row_axis;        // axis titles
  // Sequential scale (white -> dark blue) from lo to hi; or diverging
  // (blue - white - red, symmetric around 0) for signed values such as dL/dalpha.
  bool diverging = false;
  std::optional<double> lo, hi;
  int cell = 28;  // cell size in pixels
};
std::string heatmap(const Heatmap& map);
// Several heatmaps in one picture, left to right, `gap` pixels apart, each with
// its own labels and colour scale (e.g. alpha next to dL/dalpha), each inside
// a <g class="panel">.
std::string heatmaps_side_by_side(const std::vector<Heatmap>& maps, int gap = 24);

// Text made safe for XML content and attribute values.
std::string escape(std::string_view text);

// "Nice" tick positions covering [lo, hi]: steps of 1, 2 or 5 times a power of ten.
std::vector<double> nice_ticks(double lo, double hi, int approx_count = 6);

// The colour of value v on a map's scale, "#rrggbb".
std::string colour(const Heatmap& map, double v);

}  // namespace attend::tools::svg
