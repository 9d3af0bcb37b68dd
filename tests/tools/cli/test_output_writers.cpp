// Each writer of the command line against a full disk (a node of the full
// device, char 1 7, made in a scratch directory), a FIFO with a reader and a
// symbolic link, from one table: explain's --json, --graph and --dot, translate's
// --svg, data --out, and translate's standard output (translations, n-best lists,
// alignments). Then what a table row cannot hold: explain --dot's SVG, which
// Graphviz renders; the experiment's figures, results.json and models; attend
// train's model directory. A model directory is not a file: it cannot be a FIFO
// or a device, only be reached through a link (docs/reliability.md).
// test_output_cli.cpp holds the earlier cases (a reader that leaves, /dev/stdout).
#include <doctest/doctest.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "core/error.hpp"
#include "tests/support/cli_child.hpp"
#include "tests/support/special_files.hpp"
#include "tests/support/translate_cli.hpp"
#include "tools/report/experiment.hpp"

using namespace attend;
using namespace attend::testing;
namespace fs = std::filesystem;

namespace {

// One writer: its command, with "@" for the output path, and the file it then
// writes ("@" alone, or "@_1.svg" for a prefix); no "@" in args: standard output.
struct Writer {
  const char* name;
  std::vector<std::string> args;
  std::string written = "@";
};

std::vector<std::string> with_path(std::vector<std::string> args, const std::string& path) {
  for (std::string& a : args)
    if (a == "@") a = path;
  return args;
}

bool to_stdout(const Writer& w) {
  for (const std::string& a : w.args)
    if (a == "@") return false;
  return true;
}

// The file a writer writes when given `path`.
std::string written_at(const Writer& w, const std::string& path) {
  std::string file = w.written;
  return file.replace(file.find('@'), 1, path);
}

// A reader that never got a writer would wait forever: let it see an end.
std::string finish(FifoReader& reader, const std::string& fifo) {
  const int fd = ::open(fifo.c_str(), O_WRONLY | O_NONBLOCK);  // ENXIO once the reader is gone
  if (fd >= 0) ::close(fd);
  return reader.finish();
}

// A failed write: exit 1, naming the file and the reason.
void check_failed(const CliResult& r, const std::string& name) {
  INFO("stdout: ", r.out, "\nstderr: ", r.err);
  CHECK(r.exit_code == 1);
  CHECK(contains(r.err, "attend: error: "));
  CHECK(contains(r.err, name));
  CHECK(contains(r.err, "No space left on device"));
  CHECK_FALSE(contains(r.out, "wrote"));
}

// What the writer writes to a regular file: what it must write through the others.
std::string reference(const Scratch& s, const Writer& w) {
  const CliResult r = attend_cli(s, with_path(w.args, s.path("plain.out")));
  REQUIRE_MESSAGE(r.exit_code == 0, r.err);
  return to_stdout(w) ? r.out : slurp(written_at(w, s.path("plain.out")));
}

void against_full_device(const Scratch& s, const Writer& w, const std::string& full) {
  if (to_stdout(w)) {
    check_failed(run_attend_child(w.args, "/dev/null", full, O_WRONLY, s.path("stderr.txt"), 60), "standard output");
    return;
  }
  // The node sits where the writer writes: for a prefix, at PREFIX_1.svg.
  const std::string prefix = s.path("to-full");
  const std::string at = written_at(w, prefix);
  fs::rename(full, at);
  check_failed(attend_cli(s, with_path(w.args, prefix)), at);
  CHECK(is_full_device(at));
  fs::rename(at, full);
}

void against_fifo(const Scratch& s, const Writer& w, const std::string& expected) {
  const std::string prefix = s.path("to-fifo");
  const std::string fifo = to_stdout(w) ? prefix : written_at(w, prefix);
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  // Started before the reader's thread: no fork while a thread of the test runs.
  CliChild child = to_stdout(w) ? start_attend_child(w.args, "/dev/null", fifo, O_WRONLY, s.path("stderr.txt"), 60)
                                : start_attend_cli(s, with_path(w.args, prefix));
  FifoReader reader(fifo);
  const CliResult r = wait_attend_child(child);
  const std::string got = finish(reader, fifo);
  CHECK_MESSAGE(r.exit_code == 0, r.err);
  CHECK(got == expected);
  CHECK(is_fifo(fifo));
  fs::remove(fifo);
}

void through_link(const Scratch& s, const Writer& w, const std::string& expected) {
  fs::create_directories(s.dir / "real");
  const std::string prefix = s.path("to-link"), target = s.path("real/target");
  const std::string link = written_at(w, prefix);
  fs::remove(target);
  fs::create_symlink(target, link);
  const CliResult r = attend_cli(s, with_path(w.args, prefix));
  CHECK_MESSAGE(r.exit_code == 0, r.err);
  CHECK(fs::is_symlink(link));
  CHECK(slurp(target) == expected);
  fs::remove(link);
}

}  // namespace

TEST_CASE("output writers: each writer to a full device, a FIFO with a reader and a symbolic link") {
  const Scratch s("attend-output-writers");
  const std::string model = s.path("model");
  write_model(model, AttentionKind::Additive);
  const std::string text = s.write("in.txt", "the red car\nthe cat sleeps\n");
  const std::string pairs = s.write("pairs.tsv", "the red car\tla voiture rouge\n");
  const std::vector<std::string> translate = {"translate", "--model", model, "--quiet"};
  auto plus = [](std::vector<std::string> a, std::vector<std::string> b) {
    a.insert(a.end(), b.begin(), b.end());
    return a;
  };
  const std::vector<Writer> writers = {
      {"explain --json", {"explain", "--json", "@"}},
      {"explain --graph", {"explain", "--graph", "@"}},
      {"explain --dot", {"explain", "--dot", "@"}},
      {"translate --explain-grad --svg", plus(translate, {"--explain-grad", "--svg", "@", pairs}), "@_1.svg"},
      {"data toy --out", {"data", "toy", "--n", "20", "--out", "@"}},
      {"translate's translations", plus(translate, {text})},
      {"translate --n-best", plus(translate, {"--beam", "3", "--n-best", "2", text})},
      {"translate --alignments", plus(translate, {"--alignments", "soft", text})},
  };
  std::string why_not;
  const std::string full = make_full_device(s, why_not);
  for (const Writer& w : writers) {
    CAPTURE(w.name);
    const std::string expected = reference(s, w);
    REQUIRE(!expected.empty());
    if (full.empty()) MESSAGE("full device skipped: ", why_not);
    else against_full_device(s, w, full);
    against_fifo(s, w, expected);
    // Standard output through a link is the shell's to open, not attend's.
    if (!to_stdout(w)) through_link(s, w, expected);
  }
}

// Graphviz's dot (a stand-in on PATH: the test must not depend on Graphviz)
// prints the SVG; attend writes it. dot once wrote it itself with -o, in place:
// a dot that failed half way left half an SVG.
TEST_CASE("output writers: explain --dot's SVG is complete or absent, and written through a link") {
  const Scratch s("attend-output-dot-svg");
  fs::create_directories(s.dir / "bin");
  const std::string dot = s.write("bin/dot",
                                  "#!/bin/sh\n"
                                  "# -Tsvg FILE [-o OUT]: half an SVG, then a failure when ATTEND_TEST_DOT=fail\n"
                                  "out=/dev/stdout; [ \"$3\" = -o ] && out=\"$4\"\n"
                                  "if [ \"$ATTEND_TEST_DOT\" = fail ]; then printf '<svg><g>' > \"$out\"; exit 1; fi\n"
                                  "printf '<svg>%s</svg>\\n' \"$(wc -c < \"$2\")\" > \"$out\"\n");
  fs::permissions(dot, fs::perms::owner_all);
  const std::string path = std::getenv("PATH") != nullptr ? std::getenv("PATH") : "/usr/bin:/bin";
  // Set before forking and restored after: the children inherit it, no thread runs meanwhile.
  ::setenv("PATH", (s.path("bin") + ":" + path).c_str(), 1);
  struct RestorePath {
    std::string path;
    ~RestorePath() { ::setenv("PATH", path.c_str(), 1); }
  } restore{path};

  const CliResult plain = attend_cli(s, {"explain", "--dot", s.path("plain.dot")});
  REQUIRE_MESSAGE(plain.exit_code == 0, plain.err);
  const std::string svg = "<svg>" + std::to_string(slurp(s.path("plain.dot")).size()) + "</svg>\n";
  CHECK(slurp(s.path("plain.svg")) == svg);

  ::setenv("ATTEND_TEST_DOT", "fail", 1);
  const CliResult failed = attend_cli(s, {"explain", "--dot", s.path("failed.dot")});
  ::unsetenv("ATTEND_TEST_DOT");
  CHECK(failed.exit_code == 1);
  CHECK_MESSAGE(contains(failed.err, "dot -Tsvg"), failed.err);
  CHECK_FALSE(fs::exists(s.path("failed.svg")));  // not half of one

  fs::create_directories(s.dir / "real");
  fs::create_symlink(s.path("real/step.svg"), s.path("step.svg"));
  const CliResult linked = attend_cli(s, {"explain", "--dot", s.path("step.dot")});
  CHECK_MESSAGE(linked.exit_code == 0, linked.err);
  CHECK(fs::is_symlink(s.path("step.svg")));
  CHECK(slurp(s.path("real/step.svg")) == svg);
}

// The experiment's writers, in process (it trains on threads; nothing forks):
// figures to a FIFO and through links, a model directory through a link, and
// results.json, its last file, then report.html's figures, to a full device.
TEST_CASE("output writers: the experiment's SVGs, results.json and models/ to a FIFO, a link and a full device") {
  const Scratch s("attend-output-experiment-writers");
  const fs::path out = s.dir / "experiment";
  fs::create_directories(out / "models");
  fs::create_directories(s.dir / "real");
  tools::ExperimentOptions o;
  o.quick = true;
  o.train_seconds = 1;  // what is tested is the writes
  o.out_dir = out.string();
  const std::string fifo = (out / "loss.svg").string();
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  fs::create_symlink(s.dir / "real/cost.svg", out / "cost.svg");
  fs::create_symlink(s.dir / "real/report.html", out / "report.html");
  fs::create_symlink(s.dir / "real/dot", out / "models/dot");  // names no directory yet
  std::string why_not;
  const std::string full = make_full_device(s, why_not, "experiment/results.json");
  FifoReader reader(fifo);
  std::string error;
  try {
    tools::run_experiment(o);
  } catch (const Error& e) {
    error = e.what();
  }
  const std::string loss = finish(reader, fifo);
  CHECK(is_fifo(fifo));
  CHECK(loss.rfind("<svg", 0) == 0);
  CHECK(contains(loss, "</svg>"));
  CHECK(fs::is_symlink(out / "cost.svg"));
  CHECK(contains(slurp((s.dir / "real/cost.svg").string()), "</svg>"));
  CHECK(fs::is_symlink(out / "report.html"));
  CHECK(contains(slurp((s.dir / "real/report.html").string()), "</html>"));
  CHECK(fs::is_symlink(out / "models/dot"));
  CHECK(fs::exists(s.dir / "real/dot/model.safetensors"));
  CHECK(fs::exists(s.dir / "real/dot/config.json"));
  if (full.empty()) {
    MESSAGE("full device skipped: ", why_not);
    CHECK_MESSAGE(error.empty(), error);
    return;
  }
  CHECK_MESSAGE(contains(error, full), error);
  CHECK_MESSAGE(contains(error, "No space left on device"), error);
  CHECK(is_full_device(full));

  // A figure on a full disk: the report is not written after it.
  fs::remove(out / "report.html");
  fs::remove(fifo);
  fs::rename(full, out / "bleu_vs_length.svg");
  const std::string figure = (out / "bleu_vs_length.svg").string();
  try {
    tools::run_experiment(o);
    FAIL("the experiment reported no error");
  } catch (const Error& e) {
    CHECK_MESSAGE(contains(e.what(), figure), e.what());
    CHECK_MESSAGE(contains(e.what(), "No space left on device"), e.what());
  }
  CHECK(is_full_device(figure));
  CHECK_FALSE(fs::exists(out / "report.html"));
}

// attend train's files through a linked --out; on --resume, which writes into the
// directory in place, train_log.csv on a full device.
TEST_CASE("output writers: attend train's files through a symbolic link, and its log on a full device") {
  const Scratch s("attend-output-train-writers");
  fs::create_directories(s.dir / "real");
  const std::string link = s.path("model");
  fs::create_symlink("real/model", link);  // names no directory yet: the run is made where it points
  const std::vector<std::string> run = {"train",   "--toy",   "--toy-n",          "40", "--batch", "16",
                                        "--embed", "4",       "--hidden",         "4",  "--epochs", "2",
                                        "--bleu-sentences", "0", "--out", link};
  auto with = [&](std::vector<std::string> more) {
    std::vector<std::string> args = run;
    args.insert(args.end(), more.begin(), more.end());
    return args;
  };
  const CliResult first = attend_cli(s, with({"--max-steps", "2"}));
  REQUIRE_MESSAGE(first.exit_code == 0, first.err);
  CHECK(fs::is_symlink(link));
  for (const char* file : {"model.safetensors", "config.json", "source.vocab", "target.vocab", "train_log.csv",
                           "checkpoint/trainer_state.json"})
    CHECK_MESSAGE(fs::is_regular_file(s.dir / "real/model" / file), file);

  std::string why_not;
  const std::string full = make_full_device(s, why_not, "real/model/train_log.csv.full");
  if (full.empty()) {
    MESSAGE("full device skipped: ", why_not);
    return;
  }
  const std::string log = s.path("real/model/train_log.csv");
  fs::rename(full, log);
  const CliResult resumed = attend_cli(s, with({"--max-steps", "3", "--resume"}));
  check_failed(resumed, "train_log.csv");
  CHECK(is_full_device(log));
  CHECK(fs::is_symlink(link));
}
