// The high-level doors (python/attend/highlevel.py wraps them): attend.train,
// attend.Translator, attend.explain and attend.bleu. Each goes through the
// `attend` command's own code: train and translate parse their arguments with
// the command's flags (tools/cli: the same names, defaults and checks), then run
// what the command runs; explain and bleu call what `attend explain` and
// `attend bleu` call. Long work runs without the GIL, and Ctrl-C
// (StopOnInterrupt) stops it cleanly, then raises KeyboardInterrupt.
#include <pybind11/numpy.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "bindings.hpp"
#include "core/error.hpp"
#include "core/kernels/blas.hpp"
#include "models/decode/alignment.hpp"
#include "models/eval/bleu.hpp"
#include "models/eval/evaluation.hpp"
#include "models/quantize/quantize_dir.hpp"
#include "tools/cli/train_command.hpp"
#include "tools/cli/translate.hpp"
#include "tools/explain/explain.hpp"

namespace attend_py {

namespace {

namespace tools = attend::tools;

// Parses `args` (flags as the command line writes them) into a subcommand set
// up by add_flags. A bad argument is an attend.Error with CLI11's message.
template <class AddFlags>
void parse_flags(const char* command, std::vector<std::string> args, AddFlags&& add_flags) {
  CLI::App app{"attend"};
  CLI::App* cmd = app.add_subcommand(command);
  add_flags(cmd);
  args.insert(args.begin(), command);
  std::reverse(args.begin(), args.end());  // CLI11 takes the arguments last first
  try {
    app.parse(args);
  } catch (const CLI::CallForHelp&) {
    attend::fail("{}: --help is help(attend.{})", command, command);
  } catch (const CLI::ParseError& e) {
    attend::fail("{}: {}", command, e.what());
  }
}

// `attend <command> --help`, for the docstrings.
template <class AddFlags>
std::string flags_help(const char* command, AddFlags&& add_flags) {
  CLI::App app{"attend"};
  CLI::App* cmd = app.add_subcommand(command);
  add_flags(cmd);
  return cmd->help();
}

void train(const std::vector<std::string>& args) {
  tools::TrainFlags flags;
  parse_flags("train", args, [&](CLI::App* cmd) { tools::add_train_flags(*cmd, flags); });
  StopOnInterrupt interrupt;
  try {
    py::gil_scoped_release release;
    tools::run_train(flags, interrupt.stop());
  } catch (const CLI::RuntimeError&) {
    // A stopped run has saved its checkpoint (or, before its first, left --out as it was).
    std::fflush(stdout);
    interrupt.raise_if_stopped();
    throw attend::Error("train: the run ended with an error (see above)");
  }
  std::fflush(stdout);
  interrupt.raise_if_stopped();  // a stop that came after the last step: the run has finished whole
}

// One translation as Python sees it; the attention as a NumPy array.
py::array_t<double> attention_array(const std::vector<std::vector<double>>& rows) {
  const std::size_t t = rows.size(), s = rows.empty() ? 0 : rows.front().size();
  py::array_t<double> a({t, s});
  auto view = a.mutable_unchecked<2>();
  for (std::size_t i = 0; i < t; ++i)
    for (std::size_t j = 0; j < s; ++j) view(static_cast<py::ssize_t>(i), static_cast<py::ssize_t>(j)) = rows[i][j];
  return a;
}

class Translator {
 public:
  explicit Translator(const std::vector<std::string>& args) {
    parse_flags("translate", args, [&](CLI::App* cmd) { tools::add_translate_flags(cmd, flags_); });
    if (flags_.explain_grad || flags_.show_attention || !flags_.svg_prefix.empty() || !flags_.input.empty())
      attend::fail("Translator: --explain-grad, --show-attention, --svg and FILE print for the command line; "
                   "ask Translator.explain_grad() or translate(..., details=True) instead");
    options_ = flags_.decode.options();
    py::gil_scoped_release release;  // loading a large model takes a while
    std::vector<attend::LoadedModel> first = tools::load_models(flags_);
    tools::check_translate_request(first, flags_);
    replicas_ = tools::load_replicas(flags_, std::move(first));  // workers=N: N copies
    if (flags_.replace_unk && !flags_.unk_dict.empty()) dictionary_ = attend::UnkDictionary::load(flags_.unk_dict);
  }

  // The n-best lists (one translation each without n-best), in input order.
  std::vector<std::vector<attend::TextTranslation>> translate(const std::vector<std::string>& lines) {
    std::vector<attend::Seq2Seq*> ensemble;
    for (attend::LoadedModel& m : models()) ensemble.push_back(m.model.get());
    std::vector<std::int64_t> tokens;
    for (std::size_t i = 0; i < lines.size(); ++i) {  // every sentence checked before any is translated
      if (lines[i].find_first_of("\r\n") != std::string::npos)
        attend::fail("translate: sentence {} holds a line break; give one sentence per list item", i + 1);
      tokens.push_back(tools::checked_tokens("translate", ensemble, models().front().codecs.source, lines[i],
                                             fmt::format("sentence {}", i + 1), options_));
    }
    std::vector<std::vector<attend::TextTranslation>> all;
    StopOnInterrupt interrupt;
    {
      py::gil_scoped_release release;
      attend::blas::set_num_threads(flags_.threads);
      // As the command reads a file: chunks of lines, each decoded in length-sorted batches.
      constexpr std::size_t kChunkLines = 4096;
      for (std::size_t begin = 0; begin < lines.size() && !interrupt.stopped(); begin += kChunkLines) {
        const std::size_t end = std::min(lines.size(), begin + kChunkLines);
        const std::vector<std::string> chunk(lines.begin() + begin, lines.begin() + end);
        const std::vector<std::int64_t> chunk_tokens(tokens.begin() + begin, tokens.begin() + end);
        tools::for_each_translated_group(replicas_, chunk, chunk_tokens, flags_, options_, dictionary_,
                                         [&](std::vector<std::vector<attend::TextTranslation>>& out) {
                                           for (auto& n_best : out) all.push_back(std::move(n_best));
                                         });
      }
    }
    interrupt.raise_if_stopped();
    return all;
  }

  // translate --explain-grad's numbers for one pair, as a dict.
  py::dict explain_grad(const std::string& source, const std::optional<std::string>& reference) {
    if (models().size() > 1)
      attend::fail("explain_grad: it explains one model; this Translator has {}", models().size());
    attend::LoadedModel& m = models().front();
    if (m.config.attention == attend::AttentionKind::None)
      attend::fail("explain_grad: it needs a model with attention; {} has none", flags_.models.front());
    if (source.find_first_not_of(" \t") == std::string::npos) attend::fail("explain_grad: the source is empty");
    std::vector<std::string> target;
    if (reference) {
      target = m.codecs.target.encode(*reference);
      attend::check_attention_gradients_memory(static_cast<std::int64_t>(m.codecs.source.encode(source).size()),
                                               static_cast<std::int64_t>(target.size()));
    }
    attend::AttentionGradients g;
    std::string translation;
    {
      py::gil_scoped_release release;
      // Without a reference the target is the model's greedy translation, as the command explains it.
      const attend::TextTranslation greedy =
          attend::translate_text(*m.model, {source}, m.source_vocab, m.target_vocab, m.codecs).front();
      if (!reference) target = greedy.output_tokens;
      translation = greedy.text;
      g = attend::attention_gradients(*m.model, greedy.source_tokens, target, m.source_vocab, m.target_vocab);
    }
    py::dict d;
    d["source_tokens"] = g.source_tokens;
    d["target_tokens"] = g.target_tokens;
    d["alpha"] = attention_array(g.alpha);
    d["dalpha"] = attention_array(g.dalpha);
    d["loss"] = g.loss;
    d["translation"] = translation;
    return d;
  }

  const tools::TranslateFlags& flags() const { return flags_; }

 private:
  tools::TranslateFlags flags_;
  attend::DecodeOptions options_;
  // The models (an ensemble), and with workers=N N - 1 more copies of them.
  std::vector<std::vector<attend::LoadedModel>> replicas_;
  std::vector<attend::LoadedModel>& models() { return replicas_.front(); }
  attend::UnkDictionary dictionary_;
};

void bind_translation(py::module_& m) {
  using attend::TextTranslation;
  py::class_<TextTranslation>(m, "_Translation", "One translation of a sentence, with its attention and scores")
      .def_readonly("text", &TextTranslation::text, "The detokenized output")
      .def_readonly("source_tokens", &TextTranslation::source_tokens)
      .def_readonly("output_tokens", &TextTranslation::output_tokens, "Without </s>")
      .def_readonly("source_words", &TextTranslation::source_words)
      .def_readonly("output_words", &TextTranslation::output_words)
      .def_property_readonly(
          "attention", [](const TextTranslation& t) { return attention_array(t.attention); },
          "(output tokens + </s>, source tokens) float64; (0, 0) for a model without attention")
      .def_property_readonly(
          "alignment",
          [](const TextTranslation& t) {
            std::vector<std::pair<std::int64_t, std::int64_t>> links;
            if (t.attention.empty()) return links;
            for (const attend::AlignmentLink& l :
                 attend::hard_alignment(t.attention, static_cast<std::int64_t>(t.output_tokens.size()),
                                        t.source_word_of, t.output_word_of))
              links.emplace_back(l.source, l.target);
            return links;
          },
          "Hard alignment: (source word, output word) pairs, both from 0, as translate --alignments hard")
      .def_readonly("log_prob", &TextTranslation::log_prob)
      .def_readonly("score", &TextTranslation::score, "With n_best > 1: the score the beam ranked by")
      .def_readonly("length_penalty", &TextTranslation::length_penalty)
      .def_readonly("coverage_penalty", &TextTranslation::coverage_penalty)
      .def("__str__", [](const TextTranslation& t) { return t.text; })
      .def("__repr__", [](const TextTranslation& t) {
        return fmt::format("attend.Translation({}, log_prob={:.4f})", py::repr(py::str(t.text)).cast<std::string>(),
                           t.log_prob);
      });

  py::class_<Translator>(m, "_Translator")
      .def(py::init<const std::vector<std::string>&>(), py::arg("args"))
      .def("translate", &Translator::translate, py::arg("sentences"))
      .def("explain_grad", &Translator::explain_grad, py::arg("source"), py::arg("reference") = py::none())
      .def_property_readonly("n_best", [](const Translator& t) { return t.flags().decode.n_best; });
}

void bind_bleu(py::module_& m) {
  using attend::BleuScore;
  py::class_<BleuScore>(m, "_BleuScore", "Corpus BLEU as sacreBLEU computes it, with its n-gram statistics")
      .def_readonly("score", &BleuScore::score, "0..100")
      .def_readonly("precisions", &BleuScore::precisions, "1- to 4-gram precisions, 0..100, after smoothing")
      .def_readonly("matches", &BleuScore::matches, "Clipped n-gram matches per order")
      .def_readonly("totals", &BleuScore::totals, "Hypothesis n-grams per order")
      .def_readonly("brevity_penalty", &BleuScore::brevity_penalty)
      .def_readonly("sys_len", &BleuScore::sys_len, "Hypothesis tokens")
      .def_readonly("ref_len", &BleuScore::ref_len, "Reference tokens")
      .def_readonly("signature", &BleuScore::signature)
      .def("__float__", [](const BleuScore& s) { return s.score; })
      .def("__str__", &BleuScore::str)
      .def("__repr__", [](const BleuScore& s) { return "<attend.BleuScore " + s.str() + ">"; });
  m.def(
      "_bleu",
      [](const std::vector<std::string>& hyps, const std::vector<std::vector<std::string>>& streams) {
        for (std::size_t i = 0; i < streams.size(); ++i)
          if (streams[i].size() != hyps.size())
            attend::fail("bleu: {} hypotheses but reference stream {} has {} lines", hyps.size(), i + 1,
                         streams[i].size());
        py::gil_scoped_release release;
        return attend::corpus_bleu(hyps, streams);
      },
      py::arg("hypotheses"), py::arg("reference_streams"));
}

}  // namespace

void bind_highlevel(py::module_& m) {
  m.def("_train", &train, py::arg("args"), "attend train with these command-line arguments");
  m.def("_train_help", [] {
    tools::TrainFlags flags;
    return flags_help("train", [&](CLI::App* cmd) { tools::add_train_flags(*cmd, flags); });
  });
  m.def("_translate_help", [] {
    tools::TranslateFlags flags;
    return flags_help("translate", [&](CLI::App* cmd) { tools::add_translate_flags(cmd, flags); });
  });
  bind_translation(m);
  bind_bleu(m);
  m.def(
      "_quantize",
      [](const std::string& in, const std::string& out, bool overwrite) {
        py::gil_scoped_release release;
        const attend::QuantizeReport r = attend::quantize_model_dir(in, out, overwrite);
        return std::make_tuple(r.matrices, r.quantized, r.kept, r.bytes_in, r.bytes_out, r.replaced);
      },
      py::arg("model_dir"), py::arg("out"), py::arg("overwrite"));
  m.def(
      "_explain",
      [](const std::string& attention, std::uint64_t seed, bool padded, bool lstm) {
        const tools::ExplainOptions o{attention, seed, padded};
        if (!lstm && attention != "additive" && attention != "dot" && attention != "general")
          attend::fail("explain: attention must be 'additive', 'dot' or 'general', got '{}'", attention);
        const tools::ExplainResult r = lstm ? tools::explain_lstm(o) : tools::explain_attention(o);
        return py::make_tuple(r.text, r.json, r.dot, r.graph, r.checked, r.failed);
      },
      py::arg("attention"), py::arg("seed"), py::arg("padded"), py::arg("lstm"));
}

}  // namespace attend_py
