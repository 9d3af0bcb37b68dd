#include "tools/report/report.hpp"

#include <filesystem>
#include <set>

#include <fmt/format.h>

#include "core/io/file_io.hpp"
#include "models/data/detail/toy_lexicon.hpp"
#include "tools/explain/explain.hpp"
#include "tools/report/svg.hpp"

namespace attend::tools {

namespace {

std::string file_in(const ReportInput& in, const std::string& name) {
  return (std::filesystem::path(in.options.out_dir) / name).string();
}

int word_count(const std::string& s) { return static_cast<int>(tokenize(s).size()); }

struct Figure {
  std::string file, title, svg, caption;
};

std::string score_or_dash(const LengthBucket& b) { return b.sentences ? fmt::format("{:.1f}", b.bleu.score) : "-"; }

const LengthBucket* bucket(const ReportRun& r, std::int64_t lo) {
  for (const auto& b : r.bleu.buckets)
    if (b.lo == lo) return &b;
  return nullptr;
}

}  // namespace

GradientHeatmaps gradient_heatmaps(const AttentionGradients& g, const std::string& alpha_title,
                                   const std::string& row_axis) {
  GradientHeatmaps maps;
  svg::Heatmap &a = maps.alpha, &d = maps.dalpha;
  a.title = alpha_title;
  d.title = "dL/dalpha: blue wanted up, red wanted down";
  a.column_labels = d.column_labels = g.source_tokens;
  a.row_labels = d.row_labels = g.target_tokens;
  a.values = g.alpha;
  d.values = g.dalpha;
  a.lo = 0, a.hi = 1;
  d.diverging = true;
  a.column_axis = d.column_axis = "source";
  a.row_axis = d.row_axis = row_axis;
  return maps;
}

int find_reordering_sentence(const std::vector<SentencePair>& pairs, int lo, int hi) {
  std::set<std::string> after;
  for (const auto& a : toy::adjectives())
    if (!a.before_noun) after.insert(a.en);
  std::set<std::string> nouns;
  for (const auto& n : toy::nouns()) nouns.insert(n.en_sg), nouns.insert(n.en_pl);
  for (std::size_t i = 0; i < pairs.size(); ++i) {
    std::vector<std::string> w = tokenize(pairs[i].source);
    const int n = static_cast<int>(w.size());
    if (n < lo || n > hi) continue;
    for (int k = 0; k + 1 < n; ++k)
      if (after.count(w[k]) && nouns.count(w[k + 1]) && w[k] != "open") return static_cast<int>(i);
  }
  return -1;
}

namespace {

nlohmann::json options_json(const ExperimentOptions& o) {
  return {{"quick", o.quick},          {"seed", o.seed},
          {"train_pairs", o.train_pairs}, {"valid_pairs", o.valid_pairs},
          {"test_per_bucket", o.test_per_bucket}, {"embed", o.embed},
          {"hidden", o.hidden},          {"batch", o.batch},
          {"lr", o.lr},                  {"train_seconds_per_model", o.train_seconds}};
}

// One model's entry of results.json: its size, training and BLEU by length.
nlohmann::json model_json(const ReportRun& r) {
  nlohmann::json buckets = nlohmann::json::array();
  for (const LengthBucket& b : r.bleu.buckets)
    buckets.push_back({{"lo", b.lo}, {"hi", b.hi}, {"sentences", b.sentences}, {"bleu", b.bleu.score}});
  nlohmann::json curve = nlohmann::json::array();
  for (const CurvePoint& p : r.curve)
    curve.push_back({{"step", p.step}, {"seconds", p.elapsed_seconds}, {"train_loss", p.train_loss}, {"valid_loss", p.valid_loss}});
  return {{"attention", r.name},   {"parameters", r.model->num_parameters()},
          {"steps", r.steps},      {"seconds", r.seconds},
          {"bleu", r.bleu.overall.score}, {"buckets", buckets},
          {"curve", curve}};
}

// in.runs holds the models without, with additive and with dot-product attention, in that order.
Figure bleu_figure(const ReportInput& in) {
  svg::LineChart bleu_chart;
  bleu_chart.title = "BLEU by source sentence length (held-out toy sentences)";
  bleu_chart.x_label = "source sentence length (words)";
  bleu_chart.y_label = "BLEU";
  bleu_chart.y_min = 0;
  bleu_chart.y_max = 100;
  for (const ReportRun& r : in.runs) {
    svg::Series s{r.name, {}, {}, true, true};
    for (const LengthBucket& b : r.bleu.buckets) {
      if (b.sentences == 0) continue;
      s.x.push_back(0.5 * static_cast<double>(b.lo + b.hi));
      s.y.push_back(b.bleu.score);
    }
    bleu_chart.series.push_back(s);
  }
  const ReportRun &none = in.runs[0], &additive = in.runs[1], &dot = in.runs[2];
  auto bleu_at = [](const ReportRun& r, std::int64_t lo) {
    const LengthBucket* b = bucket(r, lo);
    return b && b->sentences ? b->bleu.score : 0.0;
  };
  return {"bleu_vs_length.svg", "BLEU against sentence length", svg::line_chart(bleu_chart),
          fmt::format("Without attention the decoder must carry the whole sentence in one state, and its BLEU falls "
                      "from {:.1f} on 1-10 words to {:.1f} on 51-60. With attention it looks back at every source "
                      "word: additive attention holds {:.1f} and dot-product {:.1f} on the longest sentences.",
                      bleu_at(none, 1), bleu_at(none, 51), bleu_at(additive, 51), bleu_at(dot, 51))};
}

Figure loss_figure(const ReportInput& in) {
  svg::LineChart loss_chart;
  loss_chart.title = "Training and validation loss";
  loss_chart.x_label = "training time (seconds)";
  loss_chart.y_label = "cross-entropy per target token";
  loss_chart.y_min = 0;
  for (const ReportRun& r : in.runs) {
    svg::Series train{r.name + " train", {}, {}}, valid{r.name + " valid", {}, {}};
    for (const CurvePoint& p : r.curve) {
      train.x.push_back(p.elapsed_seconds), train.y.push_back(p.train_loss);
      valid.x.push_back(p.elapsed_seconds), valid.y.push_back(p.valid_loss);
    }
    loss_chart.series.push_back(train);
    loss_chart.series.push_back(valid);
  }
  const ReportRun &none = in.runs[0], &additive = in.runs[1], &dot = in.runs[2];
  const double final_none = none.curve.empty() ? NAN : none.curve.back().valid_loss;
  const double final_add = additive.curve.empty() ? NAN : additive.curve.back().valid_loss;
  return {"loss.svg", "Loss during training", svg::line_chart(loss_chart),
          fmt::format("All three models trained for the same time on the same sentences ({} steps without "
                      "attention, {} additive, {} dot). The validation loss ends at {:.3f} without attention and "
                      "{:.3f} with additive attention.",
                      none.steps, additive.steps, dot.steps, final_none, final_add)};
}

Figure cost_figure(const ReportInput& in) {
  svg::LineChart cost_chart;
  cost_chart.title = "Decoding time against m*t (batch of 8 sentences)";
  cost_chart.x_label = "m * t (source length x output length)";
  cost_chart.y_label = "decoder time (ms)";
  cost_chart.y_min = 0;
  for (const char* name : {"none", "additive"}) {  // the order, so the colours, of the BLEU chart
    svg::Series s{name, {}, {}, false, true};
    for (const auto& c : in.cost)
      if (c["model"] == name) {
        s.x.push_back(c["m"].get<double>() * c["t"].get<double>());
        s.y.push_back(c["ms"].get<double>());
      }
    cost_chart.series.push_back(s);
  }
  return {"cost.svg", "The cost of attention", svg::line_chart(cost_chart),
          "At each of t decoder steps, attention scores all m source positions, so its work grows with m*t: "
          "the additive model's time rises along m*t. Without attention a step costs the same whatever m is, "
          "so those points spread flat across m*t at each t."};
}

// The test sentences the report shows: one whose alignment crosses (an adjective
// after its noun), a short one and a long one, each labelled.
std::vector<std::pair<std::string, int>> choose_samples(const std::vector<SentencePair>& test) {
  std::vector<std::pair<std::string, int>> chosen;
  const int crossing = find_reordering_sentence(test, 6, 14);
  if (crossing >= 0) chosen.emplace_back("crossing", crossing);
  for (std::size_t i = 0; i < test.size(); ++i)
    if (word_count(test[i].source) >= 5 && word_count(test[i].source) <= 7 && static_cast<int>(i) != crossing) {
      chosen.emplace_back("short", static_cast<int>(i));
      break;
    }
  for (std::size_t i = 0; i < test.size(); ++i)
    if (word_count(test[i].source) >= 40) {
      chosen.emplace_back("long", static_cast<int>(i));
      break;
    }
  return chosen;
}

Figure attention_figure(const std::string& model, const std::string& label, const TextTranslation& t) {
  svg::Heatmap map;
  map.title = fmt::format("{} attention: {} sentence", model, label);
  map.column_labels = t.source_tokens;
  map.row_labels = t.output_tokens;
  map.row_labels.push_back("</s>");
  map.values = t.attention;
  map.values.resize(map.row_labels.size(), std::vector<double>(map.column_labels.size(), 0.0));
  map.column_axis = "source (toy English)";
  map.row_axis = "output (toy French)";
  map.lo = 0;
  map.hi = 1;
  if (map.column_labels.size() > 25) map.cell = 14;
  const std::string file = fmt::format("attention_{}_{}.svg", model, label);
  return {file, map.title, svg::heatmap(map),
          label == "crossing"
              ? "Each row is one output word and shows where the decoder looked to write it. The "
                "alignment runs down the diagonal but crosses where an adjective follows its noun in "
                "French, as in Bahdanau et al.'s 'zone' / 'area' example."
              : "Each row is one output word and shows where the decoder looked to write it. The weights "
                "stay sharp and on the diagonal even far into the sentence, which is why BLEU holds up "
                "for long sentences."};
}

// alpha and dL/dalpha of the additive model reading the reference translation;
// results.json's "gradient_example".
nlohmann::json add_gradient_figures(const ReportInput& in, const SentencePair& pair, std::vector<Figure>& figures) {
  AttentionGradients g = attention_gradients(*in.runs[1].model, tokenize(pair.source, in.tokenizer),
                                             tokenize(pair.target, in.tokenizer), *in.source_vocab, *in.target_vocab);
  auto [a, d] = gradient_heatmaps(g, "alpha (additive, teacher forced)", "reference output");
  figures.push_back({"gradient_alpha.svg", a.title, svg::heatmap(a),
                     "The attention weights while the model reads the reference translation (teacher forcing)."});
  figures.push_back({"gradient_dalpha.svg", d.title, svg::heatmap(d),
                     fmt::format("The gradient of the loss ({:.3f} per token) at each weight: the loss would fall if "
                                 "the blue weights grew and the red ones shrank. A well-trained model shows little of "
                                 "either; early in training this picture is where alignment is learned.",
                                 g.loss)});
  return {{"source", g.source_tokens}, {"target", g.target_tokens}, {"alpha", g.alpha},
          {"dalpha", g.dalpha}, {"loss", g.loss}};
}

// The chosen sentences translated by every model: their table rows of HTML (one
// string per sentence), their attention figures, and results.json's "samples"
// (and "gradient_example", from the crossing sentence).
std::vector<std::string> add_samples(const ReportInput& in, const std::vector<std::pair<std::string, int>>& chosen,
                                     std::vector<Figure>& figures, nlohmann::json& results) {
  const auto& test = *in.test;
  nlohmann::json samples = nlohmann::json::array();
  std::vector<std::string> sample_html;
  for (const auto& [label, index] : chosen) {
    const SentencePair& pair = test[index];
    nlohmann::json sample = {{"label", label}, {"source", pair.source}, {"reference", pair.target}};
    std::string html = fmt::format("<h3>{} sentence ({} words)</h3>\n<table class=\"sample\"><tr><th>source</th><td>{}</td></tr>"
                                   "<tr><th>reference</th><td>{}</td></tr>\n",
                                   label, word_count(pair.source), svg::escape(pair.source), svg::escape(pair.target));
    for (const ReportRun& r : in.runs) {
      std::vector<TextTranslation> t = translate_text(*r.model, {pair.source}, *in.source_vocab, *in.target_vocab, in.tokenizer);
      sample["translations"][r.name] = t[0].text;
      html += fmt::format("<tr><th>{}</th><td>{}</td></tr>\n", r.name, svg::escape(t[0].text));
      if (r.name == "none" || (r.name == "dot" && label != "crossing")) continue;
      figures.push_back(attention_figure(r.name, label, t[0]));
      sample["attention"][r.name] = t[0].attention;
    }
    html += "</table>\n";
    sample_html.push_back(html);
    samples.push_back(sample);
    if (label == "crossing")  // the gradient at the weights, for the reference translation
      results["gradient_example"] = add_gradient_figures(in, pair, figures);
  }
  results["samples"] = samples;
  return sample_html;
}

// The graph of one decoder step, composed and fused, as `attend explain --graph` draws it.
Figure step_graph_figure() {
  return {"step_graph.svg", "The graph of one decoder step", explain_attention({"additive", 1, false}).graph,
          "One decoder step of a tiny model with additive attention (attend explain --seed 1 --graph), as "
          "the ops record it: left, attention composed from primitive ops, whose backward autograd "
          "derives; right, the one fused op that training runs, with its hand-written backward. Every box "
          "holds its value and the gradient of the loss; the two give the same gradients."};
}

std::string bleu_table(const ReportInput& in) {
  const ReportRun& none = in.runs[0];
  std::string html = "<table>\n<tr><th>source length</th>";
  for (const ReportRun& r : in.runs) html += fmt::format("<th>{}</th>", r.name);
  html += "</tr>\n";
  for (std::size_t b = 0; b < none.bleu.buckets.size(); ++b) {
    html += fmt::format("<tr><td>{}-{}</td>", none.bleu.buckets[b].lo, none.bleu.buckets[b].hi);
    for (const ReportRun& r : in.runs) html += fmt::format("<td>{}</td>", score_or_dash(r.bleu.buckets[b]));
    html += "</tr>\n";
  }
  html += "<tr><td>all</td>";
  for (const ReportRun& r : in.runs) html += fmt::format("<td>{:.1f}</td>", r.bleu.overall.score);
  html += "</tr>\n</table>\n";
  return html;
}

// report.html: the figures (each SVG inline) in their sections, with the BLEU
// table and the sample sentences.
std::string report_html(const ReportInput& in, const std::vector<Figure>& figures,
                        const std::vector<std::pair<std::string, int>>& chosen,
                        const std::vector<std::string>& sample_html) {
  auto figure_html = [&](const std::string& file) {
    for (const Figure& f : figures)
      if (f.file == file)
        return fmt::format("<figure>\n{}<figcaption>{}</figcaption>\n</figure>\n", f.svg, svg::escape(f.caption));
    return std::string();
  };
  std::string html =
      "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\"/>\n<title>attend experiment</title>\n"
      "<style>body{font-family:DejaVu Sans,Helvetica,Arial,sans-serif;max-width:1100px;margin:2em auto;padding:0 1em;"
      "color:#222}table{border-collapse:collapse;margin:1em 0}td,th{border:1px solid #ccc;padding:4px 10px;"
      "text-align:right}table.sample td{text-align:left}figure{margin:2em 0}figcaption{max-width:760px;color:#444}"
      "</style>\n</head>\n<body>\n";
  html += "<h1>Attention, reproduced on a CPU</h1>\n";
  html += fmt::format(
      "<p>Three Seq2Seq models (embedding {}, hidden {}, bidirectional LSTM encoder) trained on the same {} toy "
      "English-to-French sentence pairs of 3 to 60 words for the same time ({} s each): without attention, with "
      "additive (Bahdanau) attention and with dot-product attention. BLEU is measured on {} held-out sentences, "
      "{} in each length bucket.</p>\n",
      in.options.embed, in.options.hidden, in.options.train_pairs, static_cast<int>(in.options.train_seconds),
      in.test->size(), in.options.test_per_bucket);
  html += "<h2>BLEU by sentence length</h2>\n" + figure_html("bleu_vs_length.svg");
  html += bleu_table(in);
  html += "<h2>Training</h2>\n" + figure_html("loss.svg");
  html += "<h2>What attention costs</h2>\n" + figure_html("cost.svg");
  html += "<h2>Sample translations and their alignments</h2>\n";
  for (std::size_t i = 0; i < chosen.size(); ++i) {
    html += sample_html[i];
    html += figure_html(fmt::format("attention_additive_{}.svg", chosen[i].first));
    html += figure_html(fmt::format("attention_dot_{}.svg", chosen[i].first));
  }
  html += "<h2>Gradient flow through attention</h2>\n";
  html += figure_html("gradient_alpha.svg") + figure_html("gradient_dalpha.svg");
  html += "<h2>Backprop through one step</h2>\n<div style=\"overflow-x:auto\">\n" + figure_html("step_graph.svg") +
          "</div>\n";
  html += "</body>\n</html>\n";
  return html;
}

}  // namespace

nlohmann::json write_report(const ReportInput& in) {
  nlohmann::json results;
  results["options"] = options_json(in.options);
  results["vocabulary"] = {{"source", in.source_vocab->size()}, {"target", in.target_vocab->size()}};
  for (const ReportRun& r : in.runs) results["models"][r.name] = model_json(r);
  results["cost"] = in.cost;
  std::vector<Figure> figures = {bleu_figure(in), loss_figure(in), cost_figure(in)};
  const std::vector<std::pair<std::string, int>> chosen = choose_samples(*in.test);
  const std::vector<std::string> sample_html = add_samples(in, chosen, figures, results);
  figures.push_back(step_graph_figure());
  for (const Figure& f : figures) write_file_atomic(file_in(in, f.file), f.svg);
  write_file_atomic(file_in(in, "report.html"), report_html(in, figures, chosen, sample_html));
  return results;
}

}  // namespace attend::tools
