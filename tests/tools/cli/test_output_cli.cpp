// Every output path of the command line against a full disk (a node of the full
// device, char 1 7, made in a scratch directory), a FIFO with a reader and a
// symbolic link: explain --json/--graph/--dot, translate's standard output and
// --svg files, data --out, and a model directory reached through a link. A
// failed write is an error naming the file, with a non-zero exit and no
// "wrote ..." line; a device or FIFO is never replaced; a link stays a link.
// The experiment's report meets a full disk too.
#include <doctest/doctest.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <thread>

#include <nlohmann/json.hpp>

#include "core/io/file_io.hpp"
#include "tests/support/cli_child.hpp"
#include "tests/support/special_files.hpp"
#include "tests/support/translate_cli.hpp"
#include "tools/report/experiment.hpp"

using namespace attend;
using namespace attend::testing;
namespace fs = std::filesystem;

namespace {

// Why the last make_full_device made no node.
std::string why_no_full_device;

// DIR/name, a node of the full device, or "" where mknod is not allowed.
std::string make_full_device(const Scratch& s, const std::string& name = "full") {
  return attend::testing::make_full_device(s, why_no_full_device, name);
}

#define SKIP_WITHOUT_MKNOD(path)                       \
  if ((path).empty()) {                                \
    MESSAGE("skipped: ", why_no_full_device);          \
    return;                                            \
  }

// `attend ARGS...` in a child whose standard output is the file at stdout_path
// (a device, a FIFO), its standard error in the scratch directory.
CliResult attend_to(const Scratch& s, const std::string& stdout_path, std::vector<std::string> args) {
  return run_attend_child(std::move(args), "/dev/null", stdout_path, O_WRONLY, s.path("stderr.txt"), 60);
}

// A failed write: exit 1, the error names the file and the reason, and no line says it was written.
void check_write_failed(const CliResult& r, const std::string& name) {
  INFO("stdout: ", r.out, "\nstderr: ", r.err);
  CHECK(r.exit_code == 1);
  CHECK(contains(r.err, "attend: error: "));
  CHECK(contains(r.err, name));
  CHECK(contains(r.err, "No space left on device"));
  CHECK_FALSE(contains(r.out, "wrote every number"));
  CHECK_FALSE(contains(r.out, "drew the graph"));
  CHECK_FALSE(contains(r.out, "wrote the step's graph"));
}

}  // namespace

TEST_CASE("output cli: explain --json, --graph and --dot to a full disk fail naming it and leave the node") {
  const Scratch s("attend-output-explain-full");
  const std::string full = make_full_device(s);
  SKIP_WITHOUT_MKNOD(full);
  for (const char* flag : {"--json", "--graph", "--dot"}) {
    CAPTURE(flag);
    check_write_failed(attend_cli(s, {"explain", flag, full}), full);
    CHECK(is_full_device(full));
  }
  // The same through a symbolic link to it.
  const std::string link = s.path("link.json");
  fs::create_symlink(full, link);
  check_write_failed(attend_cli(s, {"explain", "--json", link}), link);
  CHECK(fs::is_symlink(link));
  CHECK(is_full_device(full));
}

TEST_CASE("output cli: standard output on a full disk is an error, not a success") {
  const Scratch s("attend-output-stdout-full");
  const std::string full = make_full_device(s);
  SKIP_WITHOUT_MKNOD(full);
  check_write_failed(attend_to(s, full, {"explain"}), "standard output");
  check_write_failed(attend_to(s, full, {"data", "toy", "--n", "20"}), "standard output");
  // The text before the JSON already fails ("standard output"), or the JSON does ("/dev/stdout").
  const CliResult both = attend_to(s, full, {"explain", "--json", "/dev/stdout"});
  check_write_failed(both, contains(both.err, "/dev/stdout") ? "/dev/stdout" : "standard output");
  const std::string model = s.path("model");
  write_model(model, AttentionKind::Additive);
  const std::string input = s.write("in.txt", "the red car\nthe cat sleeps\n");
  check_write_failed(attend_to(s, full, {"translate", "--model", model, "--quiet", input}), "standard output");
  check_write_failed(attend_to(s, full, {"translate", "--model", model, "--quiet", "--alignments", "soft", input}),
                     "standard output");
  CHECK(is_full_device(full));
}

TEST_CASE("output cli: explain --json and --graph to a FIFO with a reader write every byte through") {
  const Scratch s("attend-output-explain-fifo");
  const CliResult plain = attend_cli(s, {"explain", "--json", s.path("plain.json"), "--graph", s.path("plain.svg")});
  REQUIRE(plain.exit_code == 0);
  const std::string fifo = s.path("fifo");
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  {
    const CliChild writer = start_attend_cli(s, {"explain", "--json", fifo});
    FifoReader reader(fifo);
    const CliResult r = wait_attend_child(writer);
    const std::string got = reader.finish();
    INFO(r.err);
    CHECK(r.exit_code == 0);
    CHECK(got == slurp(s.path("plain.json")));
    CHECK(contains(r.out, "wrote every number to " + fifo));
  }
  {
    const CliChild writer = start_attend_cli(s, {"explain", "--graph", fifo});
    FifoReader reader(fifo);
    const CliResult r = wait_attend_child(writer);
    CHECK(r.exit_code == 0);
    CHECK(reader.finish() == slurp(s.path("plain.svg")));
  }
  CHECK(is_fifo(fifo));
}

// Opens the FIFO, reads one byte and goes away, as `head -c 1` would.
std::thread reader_that_leaves(const std::string& fifo) {
  return std::thread([fifo] {
    const int fd = ::open(fifo.c_str(), O_RDONLY);
    if (fd < 0) return;
    char byte = 0;
    [[maybe_unused]] const ssize_t n = ::read(fd, &byte, 1);
    ::close(fd);
  });
}

TEST_CASE("output cli: a reader that goes away is a write error naming the file, not a death by SIGPIPE") {
  const Scratch s("attend-output-broken-pipe");
  const std::string fifo = s.path("fifo");
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  // Far more than a pipe holds (64 KiB), so that the writer is still writing when the reader leaves.
  {
    const CliChild writer = start_attend_cli(s, {"data", "toy", "--n", "20000", "--out", fifo});
    std::thread reader = reader_that_leaves(fifo);
    const CliResult r = wait_attend_child(writer);
    reader.join();
    INFO("stderr: ", r.err);
    CHECK(r.signal == 0);
    CHECK(r.exit_code == 1);
    CHECK(contains(r.err, "attend: error: "));
    CHECK(contains(r.err, fifo));
    CHECK(contains(r.err, "Broken pipe"));
  }
  {
    const CliChild writer =
        start_attend_child({"data", "toy", "--n", "20000"}, "/dev/null", fifo, O_WRONLY, s.path("stderr.txt"), 60);
    std::thread reader = reader_that_leaves(fifo);
    const CliResult r = wait_attend_child(writer);
    reader.join();
    INFO("stderr: ", r.err);
    CHECK(r.signal == 0);
    CHECK(r.exit_code == 1);
    CHECK(contains(r.err, "standard output"));
    CHECK(contains(r.err, "Broken pipe"));
  }
  CHECK(is_fifo(fifo));
}

TEST_CASE("output cli: explain --json to a symbolic link replaces its target and keeps the link") {
  const Scratch s("attend-output-explain-link");
  fs::create_directories(s.dir / "real");
  const std::string target = s.write("real/numbers.json", "old\n");
  const std::string link = s.path("numbers.json");
  fs::create_symlink("real/numbers.json", link);
  const CliResult r = attend_cli(s, {"explain", "--json", link});
  INFO(r.err);
  CHECK(r.exit_code == 0);
  CHECK(fs::is_symlink(link));
  CHECK(fs::read_symlink(link) == "real/numbers.json");
  CHECK(nlohmann::json::accept(slurp(target)));
}

TEST_CASE("output cli: explain --json /dev/stdout follows the text on standard output") {
  const Scratch s("attend-output-explain-stdout");
  const bool was_link = fs::is_symlink("/dev/stdout");
  const CliResult r = attend_cli(s, {"explain", "--json", "/dev/stdout"});
  INFO(r.err);
  CHECK(r.exit_code == 0);
  const std::size_t json_at = r.out.find("\n{");
  REQUIRE(json_at != std::string::npos);
  const std::size_t said = r.out.find("wrote every number to /dev/stdout");
  REQUIRE(said != std::string::npos);
  CHECK(json_at < said);
  CHECK(nlohmann::json::accept(r.out.substr(json_at + 1, said - json_at - 1)));
  CHECK(fs::is_symlink("/dev/stdout") == was_link);
}

TEST_CASE("output cli: translate --explain-grad --svg and data --out to a full disk, a FIFO and a link") {
  const Scratch s("attend-output-files");
  const std::string full = make_full_device(s, "grad_1.svg");
  SKIP_WITHOUT_MKNOD(full);
  const std::string model = s.path("model");
  write_model(model, AttentionKind::Additive);
  const std::string input = s.write("pairs.tsv", "the red car\tla voiture rouge\n");
  const CliResult svg = attend_cli(s, {"translate", "--model", model, "--explain-grad", "--svg", s.path("grad"), input});
  check_write_failed(svg, full);
  CHECK_FALSE(contains(svg.out, "wrote " + full));
  CHECK(is_full_device(full));

  const std::string data_full = make_full_device(s, "toy.tsv");
  check_write_failed(attend_cli(s, {"data", "toy", "--n", "20", "--out", data_full}), data_full);
  CHECK(is_full_device(data_full));

  const CliResult plain = attend_cli(s, {"data", "toy", "--n", "20"});
  REQUIRE(plain.exit_code == 0);
  const std::string fifo = s.path("fifo");
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  const CliChild writer = start_attend_cli(s, {"data", "toy", "--n", "20", "--out", fifo});
  FifoReader reader(fifo);
  CHECK(wait_attend_child(writer).exit_code == 0);
  CHECK(reader.finish() == plain.out);
  CHECK(is_fifo(fifo));

  fs::create_directories(s.dir / "real");
  const std::string link = s.path("toy-link.tsv");
  fs::create_symlink(s.path("real/toy.tsv"), link);
  CHECK(attend_cli(s, {"data", "toy", "--n", "20", "--out", link}).exit_code == 0);
  CHECK(fs::is_symlink(link));
  CHECK(slurp(s.path("real/toy.tsv")) == plain.out);
}

TEST_CASE("output cli: average --out through a symbolic link replaces the directory it names, the link stays") {
  const Scratch s("attend-output-model-link");
  const std::string a = s.path("a"), b = s.path("b");
  write_model(a, AttentionKind::Additive, 1);
  write_model(b, AttentionKind::Additive, 2);
  fs::create_directories(s.dir / "real");
  const std::string link = s.path("averaged");
  fs::create_symlink("real/model", link);
  // The link names no directory yet: the model is made where it points.
  CliResult r = attend_cli(s, {"average", a, b, "--out", link});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(fs::is_symlink(link));
  CHECK(fs::exists(s.dir / "real/model/model.safetensors"));
  const std::string first = slurp(s.path("real/model/model.safetensors"));
  // Replaced with --overwrite: still through the link, which stays.
  r = attend_cli(s, {"average", a, a, "--out", link, "--overwrite"});
  REQUIRE(r.exit_code == 0);
  CHECK(fs::is_symlink(link));
  CHECK(fs::read_symlink(link) == "real/model");
  CHECK(slurp(s.path("real/model/model.safetensors")) != first);
  CHECK(nlohmann::json::parse(slurp(s.path("real/model/config.json")))["averaged_from"] ==
        nlohmann::json::array({a, a}));
  // Without --overwrite the model it names is refused, as a directory would be.
  r = attend_cli(s, {"average", a, b, "--out", link});
  CHECK(r.exit_code == 1);
  CHECK(contains(r.err, "--overwrite"));
  for (const auto& e : fs::directory_iterator(s.dir / "real"))
    CHECK_MESSAGE(e.path().filename().string().find(".tmp-") == std::string::npos, e.path());
}

TEST_CASE("output cli: the experiment's report on a full disk is an error naming it, and results.json is not written") {
  const Scratch s("attend-output-experiment");
  fs::create_directories(s.dir / "experiment");
  const std::string full = make_full_device(s, "experiment/report.html");
  SKIP_WITHOUT_MKNOD(full);
  tools::ExperimentOptions o;
  o.quick = true;
  o.train_seconds = 1;  // what is tested is the last writes
  o.out_dir = s.path("experiment");
  try {
    tools::run_experiment(o);
    FAIL("the experiment reported no error");
  } catch (const Error& e) {
    CHECK_MESSAGE(contains(e.what(), full), e.what());
    CHECK_MESSAGE(contains(e.what(), "No space left on device"), e.what());
  }
  CHECK(is_full_device(full));
  CHECK(fs::exists(s.dir / "experiment/loss.svg"));  // the figures came first
  CHECK_FALSE(fs::exists(s.dir / "experiment/results.json"));
}
