// Fault tests of `attend train`: the program itself killed at random instants and
// right after every rename (ATTEND_FAULT=kill-after-rename:N, core/io/file_io.hpp),
// a full disk at every write (ATTEND_FAULT=enospc-at-write:N), signals, and a
// model directory trained into again. After any of them the directory loads,
// and --resume ends exactly where an uninterrupted run ends: the same weights,
// bit for bit, and the same log, each row once. The other writers (explain's
// files, translate's output and SVGs, data --out, average) meet a full disk at
// every write too: an error naming the file, and the old file whole.
#include <doctest/doctest.h>

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <thread>

#include "core/io/file_io.hpp"
#include "core/random.hpp"
#include "core/io/safetensors.hpp"
#include "models/train/checkpoint.hpp"
#include "models/model_dir.hpp"
#include "tests/support/scratch.hpp"
#include "tests/support/translate_cli.hpp"

using namespace attend;
namespace fs = std::filesystem;

namespace {

using attend::testing::Scratch;

// A tiny run, two epochs of 7 steps (CLI11 refuses a flag given twice, so the
// tests add the rest: kRun + --out, or kBase + their own --toy-n/--epochs).
const std::vector<std::string> kBase = {"train", "--toy", "--toy-max-len", "8", "--embed", "8", "--hidden", "8",
                                        "--batch", "16", "--dropout", "0.2", "--bleu-sentences", "2", "--threads", "1"};
const std::vector<std::string> kRun = [] {
  auto a = kBase;
  a.insert(a.end(), {"--toy-n", "120", "--epochs", "2"});
  return a;
}();
std::vector<std::string> with(std::vector<std::string> a, const std::vector<std::string>& more) {
  a.insert(a.end(), more.begin(), more.end());
  return a;
}

// Starts `attend args...` with ATTEND_FAULT=fault (none if empty), its output in log.
pid_t start(const std::vector<std::string>& args, const std::string& fault, const std::string& log) {
  pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    ::dup2(fd, 1);
    ::dup2(fd, 2);
    if (fault.empty()) ::unsetenv("ATTEND_FAULT");
    else ::setenv("ATTEND_FAULT", fault.c_str(), 1);
    std::vector<char*> argv{const_cast<char*>(ATTEND_CLI)};
    for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    ::execv(ATTEND_CLI, argv.data());
    ::_exit(127);
  }
  return pid;
}

int wait_for(pid_t pid) {
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return status;
}

int run(std::vector<std::string> args, const std::string& out, const std::string& fault = "",
        const std::vector<std::string>& extra = {}) {
  args.insert(args.end(), {"--out", out});
  args.insert(args.end(), extra.begin(), extra.end());
  return wait_for(start(args, fault, out + ".log"));
}

bool exited_ok(int status) { return WIFEXITED(status) && WEXITSTATUS(status) == 0; }

// train_log.csv without its last column (elapsed seconds differ from run to run).
std::string log_without_times(const std::string& dir) {
  std::string out;
  for (const std::string& line : split_lines(read_file(path_in(dir, "train_log.csv"))))
    out += line.substr(0, line.rfind(',')) + "\n";
  return out;
}

void check_same_tensors(const std::string& a, const std::string& b) {
  SafetensorsFile x = load_safetensors(a), y = load_safetensors(b);
  REQUIRE(x.tensors.size() == y.tensors.size());
  for (const auto& [name, t] : x.tensors) CHECK_MESSAGE(equal(t, y.tensors.at(name)), a, ": ", name);
}

// After a fault: DIR (if the run got as far as creating it) loads, --resume finishes
// the run, and the result equals the uninterrupted run in ref.
void check_recovers(const std::string& dir, const std::string& ref) {
  if (!fs::exists(dir)) {
    // Stopped before its first checkpoint: nothing was left but a staging
    // directory, and a plain rerun must start cleanly beside it.
    REQUIRE(exited_ok(run(kRun, dir)));
  } else {
    CHECK_NOTHROW(load_model_dir(dir, "checkpoint/last.safetensors"));
    if (fs::exists(path_in(dir, "model.safetensors"))) CHECK_NOTHROW(load_model_dir(dir));
    const int status = run(kRun, dir, "", {"--resume"});
    INFO(read_file(dir + ".log"));
    REQUIRE(exited_ok(status));
  }
  check_same_tensors(path_in(dir, "checkpoint/last.safetensors"), path_in(ref, "checkpoint/last.safetensors"));
  check_same_tensors(path_in(dir, "checkpoint/optimizer.safetensors"), path_in(ref, "checkpoint/optimizer.safetensors"));
  check_same_tensors(path_in(dir, "model.safetensors"), path_in(ref, "model.safetensors"));
  CHECK(log_without_times(dir) == log_without_times(ref));
  for (const auto& e : fs::directory_iterator(dir))  // the kill's leftovers are gone
    CHECK_MESSAGE(e.path().filename().string().find(".tmp-") == std::string::npos, e.path());
}

// Runs the training with fault spec PREFIX:N for N = 1, 2, ... until a run is
// no longer hit, checking recovery after each; returns how many were hit. With
// sparse, N goes 1..16 and then grows by a fifth each time (a run makes a few
// hundred writes, one per tensor: all of them would take a minute).
int every_fault(const std::string& prefix, const std::string& base, const std::string& ref, bool expect_kill,
                bool sparse = false) {
  int hit = 0;
  for (int n = 1; n < 100000; n += (sparse && n >= 16) ? n / 5 : 1) {
    CAPTURE(n);
    const std::string dir = fmt::format("{}/{}-{}", base, prefix, n);
    const int status = run(kRun, dir, fmt::format("{}:{}", prefix, n));
    if (exited_ok(status)) break;  // the run had fewer than n renames (writes)
    ++hit;
    if (expect_kill) {
      CHECK((WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL));
    } else {
      CHECK(WIFEXITED(status));
      CHECK(read_file(dir + ".log").find("No space left on device") != std::string::npos);
    }
    check_recovers(dir, ref);
    fs::remove_all(dir);
  }
  return hit;
}

}  // namespace

TEST_CASE("a kill right after any rename leaves a directory that loads and resumes exactly") {
  const Scratch scratch("attend-faults-renames");
  const std::string base = scratch.dir.string();
  const std::string ref = base + "/ref";
  REQUIRE(exited_ok(run(kRun, ref)));
  const int hit = every_fault("kill-after-rename", base, ref, true);
  CHECK(hit >= 10);  // staging, two epochs of model, log and checkpoint files, the switches
}

TEST_CASE("a full disk at any write keeps the previous checkpoint whole") {
  const Scratch scratch("attend-faults-enospc");
  const std::string base = scratch.dir.string();
  const std::string ref = base + "/ref";
  REQUIRE(exited_ok(run(kRun, ref)));
  const int hit = every_fault("enospc-at-write", base, ref, false, true);
  CHECK(hit >= 8);
}

TEST_CASE("kill -9 at random instants leaves a directory that loads and resumes exactly") {
  const Scratch scratch("attend-faults-random");
  const std::string base = scratch.dir.string();
  const std::string ref = base + "/ref";
  const auto t0 = std::chrono::steady_clock::now();
  REQUIRE(exited_ok(run(kRun, ref)));
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  Generator gen(12);
  for (int i = 0; i < 6; ++i) {
    CAPTURE(i);
    const std::string dir = fmt::format("{}/kill-{}", base, i);
    const pid_t pid = start([&] {
      auto a = kRun;
      a.insert(a.end(), {"--out", dir});
      return a;
    }(), "", dir + ".log");
    std::this_thread::sleep_for(std::chrono::duration<double>(gen.uniform() * seconds));
    ::kill(pid, SIGKILL);
    const int status = wait_for(pid);
    if (!exited_ok(status)) check_recovers(dir, ref);
    fs::remove_all(dir);
  }
}

namespace {
// Starts a long run and waits until it is training (its staging directory has
// a config, so its signal handlers are in place).
pid_t start_long_run(const std::string& dir) {
  auto args = with(kBase, {"--toy-n", "3000", "--epochs", "1000", "--out", dir});
  const pid_t pid = start(args, "", dir + ".log");
  const fs::path parent = fs::path(dir).parent_path();
  for (int i = 0; i < 600; ++i) {
    for (const auto& e : fs::directory_iterator(parent))
      if (e.path().filename().string().rfind(fs::path(dir).filename().string() + ".tmp-", 0) == 0 &&
          fs::exists(e.path() / "config.json"))
        return pid;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  FAIL("the run did not start within 30 s");
  return pid;
}
}  // namespace

TEST_CASE("SIGTERM saves a checkpoint and exits, a second signal ends the process at once") {
  const Scratch scratch("attend-faults-signals");
  const std::string base = scratch.dir.string();
  {
    const std::string dir = base + "/once";
    const pid_t pid = start_long_run(dir);
    ::kill(pid, SIGTERM);
    const int status = wait_for(pid);
    INFO(read_file(dir + ".log"));
    CHECK((WIFEXITED(status) && WEXITSTATUS(status) == 128 + SIGTERM));
    CHECK(has_checkpoint(dir));
    CHECK(read_file(dir + ".log").find("interrupted: checkpoint saved") != std::string::npos);
  }
  {
    const std::string dir = base + "/twice";
    const pid_t pid = start_long_run(dir);
    // Two different signals, so that the second cannot merge with a still pending
    // first. Delivered together, either handler may run first; the process must
    // die of the other one, without saving.
    ::kill(pid, SIGINT);
    ::kill(pid, SIGTERM);
    const int status = wait_for(pid);
    CAPTURE(status);
    REQUIRE(WIFSIGNALED(status));
    CHECK((WTERMSIG(status) == SIGTERM || WTERMSIG(status) == SIGINT));
    CHECK(read_file(dir + ".log").find("interrupted: checkpoint saved") == std::string::npos);
  }
}

TEST_CASE("training into an existing model directory needs --resume or --overwrite, and never breaks it") {
  const Scratch scratch("attend-faults-overwrite");
  const std::string base = scratch.dir.string();
  const std::string dir = base + "/model";
  const auto one_epoch = with(kBase, {"--toy-n", "120", "--epochs", "1"});
  REQUIRE(exited_ok(run(one_epoch, dir)));
  const std::string saved = read_file(path_in(dir, "model.safetensors"));

  int status = run(kRun, dir, "", {"--seed", "5"});
  CHECK(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) != 0);
  CHECK(read_file(dir + ".log").find("--overwrite") != std::string::npos);
  CHECK(read_file(path_in(dir, "model.safetensors")) == saved);

  // Killed at every rename of an --overwrite run: the old model stays until the new one loads.
  for (int n = 1; n < 200; ++n) {
    CAPTURE(n);
    status = run(kRun, dir, fmt::format("kill-after-rename:{}", n), {"--seed", "5", "--overwrite"});
    if (exited_ok(status)) break;
    LoadedModel m = load_model_dir(dir);  // loads, whichever model it is
    CHECK(m.model != nullptr);
    const bool old = read_file(path_in(dir, "model.safetensors")) == saved;
    if (!old) CHECK(has_checkpoint(dir));  // the new model came with its checkpoint
  }
  CHECK(read_file(path_in(dir, "model.safetensors")) != saved);  // the last run replaced it
  // The log is the new run's alone (header and two epochs), not appended to the old run's.
  CHECK(split_lines(read_file(path_in(dir, "train_log.csv"))).size() == 3);
  CHECK(remove_stale_temporaries(base) == 0);  // the next run already removed the killed runs' leftovers
}

TEST_CASE("--resume honours an explicit --lr and says so") {
  const Scratch scratch("attend-faults-lr");
  const std::string base = scratch.dir.string();
  const std::string dir = base + "/model";
  const auto toy = with(kBase, {"--toy-n", "120"});
  REQUIRE(exited_ok(run(toy, dir, "", {"--epochs", "1", "--lr", "0.01"})));
  REQUIRE(exited_ok(run(toy, dir, "", {"--resume", "--epochs", "2", "--lr", "0.005"})));
  CHECK(read_file(dir + ".log").find("lr: 0.005 (--lr overrides the checkpoint's 0.01)") != std::string::npos);
  SafetensorsFile opt = load_safetensors(path_in(dir, "checkpoint/optimizer.safetensors"));
  CHECK(opt.tensors.at("lr").item() == doctest::Approx(0.005));
  // Without --lr, the checkpoint's learning rate (now 0.005) goes on.
  REQUIRE(exited_ok(run(toy, dir, "", {"--resume", "--epochs", "3"})));
  CHECK(read_file(dir + ".log").find("overrides") == std::string::npos);
  CHECK(load_safetensors(path_in(dir, "checkpoint/optimizer.safetensors")).tensors.at("lr").item() ==
        doctest::Approx(0.005));
}

TEST_CASE("without validation data the summary names the epoch that was saved") {
  const Scratch scratch("attend-faults-novalid");
  const std::string base = scratch.dir.string();
  const std::string dir = base + "/model";
  REQUIRE(exited_ok(run(with(kBase, {"--toy-n", "120"}), dir, "", {"--valid-fraction", "0", "--epochs", "3", "--lr", "0.01"})));
  const std::string saved_epoch = load_safetensors(path_in(dir, "model.safetensors")).metadata.at("epoch");
  CHECK(saved_epoch != "1");  // the training loss fell, so a later epoch was saved
  CHECK(read_file(dir + ".log").find("best: epoch " + saved_epoch + " ") != std::string::npos);
}

namespace {
// Runs `attend args` with a full disk at its Nth write, N = 1, 2, ... until a run
// is no longer hit. Each hit run exits 1, says "No space left on device" and
// names `name`, prints no `success` line, and leaves `target` (if any) as it was.
// Returns how many runs were hit.
int every_full_disk(const std::string& base, const std::vector<std::string>& args, const std::string& name,
                    const std::string& success, const std::string& target = "") {
  int hit = 0;
  for (int n = 1; n < 1000; ++n) {
    CAPTURE(n);
    if (!target.empty()) write_file_atomic(target, "old\n");
    const std::string log = base + "/full-disk.log";
    const int status = wait_for(start(args, fmt::format("enospc-at-write:{}", n), log));
    const std::string said = read_file(log);
    if (exited_ok(status)) {
      if (!success.empty()) CHECK(said.find(success) != std::string::npos);
      break;
    }
    ++hit;
    INFO(said);
    CHECK((WIFEXITED(status) && WEXITSTATUS(status) == 1));
    CHECK(said.find("No space left on device") != std::string::npos);
    CHECK(said.find(name) != std::string::npos);
    if (!success.empty()) CHECK(said.find(success) == std::string::npos);
    if (!target.empty()) CHECK(read_file(target) == "old\n");
  }
  return hit;
}
}  // namespace

TEST_CASE("a full disk at any write of explain, translate, data and average is an error naming the file") {
  const Scratch scratch("attend-faults-writers");
  const std::string base = scratch.dir.string();
  const std::string out = base + "/out";
  CAPTURE(out);
  CHECK(every_full_disk(base, {"explain", "--json", out}, out, "wrote every number", out) >= 1);
  CHECK(every_full_disk(base, {"explain", "--graph", out}, out, "drew the graph", out) >= 1);
  CHECK(every_full_disk(base, {"explain", "--dot", out}, out, "wrote the step's graph", out) >= 1);
  CHECK(every_full_disk(base, {"data", "toy", "--n", "50", "--out", out}, out, "", out) >= 1);
  CHECK(every_full_disk(base, {"data", "toy", "--n", "50"}, "standard output", "") >= 1);

  const std::string model = base + "/model", other = base + "/other";
  attend::testing::write_model(model, AttentionKind::Additive, 1);
  attend::testing::write_model(other, AttentionKind::Additive, 2);
  const std::string input = base + "/in.tsv";
  write_file_atomic(input, "the red car\tla voiture rouge\nthe cat sleeps\n");
  CHECK(every_full_disk(base, {"translate", "--model", model, "--quiet", input}, "standard output", "") >= 1);
  CHECK(every_full_disk(base, {"translate", "--model", model, "--quiet", "--n-best", "2", "--beam", "2", input},
                        "standard output", "") >= 1);
  const std::string svg = base + "/grad_1.svg";
  const std::string pair = base + "/pair.tsv";
  write_file_atomic(pair, "the red car\tla voiture rouge\n");
  CHECK(every_full_disk(base, {"translate", "--model", model, "--explain-grad", "--svg", base + "/grad", pair}, svg,
                        "wrote " + svg, svg) >= 1);
  const std::string averaged = base + "/averaged";
  CHECK(every_full_disk(base, {"average", model, other, "--out", averaged}, averaged, "averaged 2 models") >= 4);
  CHECK(remove_stale_temporaries(base) == 0);  // each failed run removed its own staging directory
  for (const auto& e : fs::directory_iterator(base))
    CHECK_MESSAGE(e.path().filename().string().find(".tmp-") == std::string::npos, e.path());
}
