// models/train/checkpoint and the trainer's guards: a checkpoint is one unit whose
// files must agree, trainer_state.json is checked key by key, no non-finite
// weight is saved or loaded, stale temporary files are removed.
#include <doctest/doctest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>

#include "core/io/file_io.hpp"
#include "core/io/safetensors.hpp"
#include "layers/serialize.hpp"
#include "models/train/checkpoint.hpp"
#include "models/model_dir.hpp"
#include "models/data/toy_language.hpp"
#include "models/train/trainer.hpp"
#include "tests/support/scratch.hpp"
#include "tests/support/toy_data.hpp"

using namespace attend;
namespace fs = std::filesystem;

namespace {

using attend::testing::Scratch;

struct Toy : attend::testing::ToyData {
  Seq2SeqConfig config;
};

Toy toy(std::int64_t n) {
  Toy t{attend::testing::toy_data(n, /*max_len=*/6, /*seed=*/3), {}};
  t.config.source_vocab = t.source.size();
  t.config.target_vocab = t.target.size();
  t.config.embed = 6;
  t.config.hidden = 8;
  return t;
}

TrainOptions options(const std::string& dir) {
  TrainOptions o;
  o.batch = 8;
  o.epochs = 2;
  o.lr = 0.01;
  o.bleu_sentences = 0;
  o.out_dir = dir;
  return o;
}

}  // namespace

TEST_CASE("a checkpoint is one directory, replaced whole, whose files must agree") {
  Toy d = toy(40);
  const Scratch scratch("attend-ckpt-unit");
  const std::string dir = scratch.dir.string();
  Generator init(1);
  Seq2Seq model(d.config, init);
  TrainOptions o = options(dir);
  o.epochs = 1;
  Trainer t(model, d.target, d.train, d.valid, o);
  t.run();
  const std::string first = fs::path(checkpoint_dir(dir)) / "optimizer.safetensors";
  const std::string old_optimizer = read_file(first);
  for (const char* f : {"last.safetensors", "optimizer.safetensors", "trainer_state.json"})
    CHECK_MESSAGE(fs::exists(fs::path(checkpoint_dir(dir)) / f), f);

  TrainOptions more = o;
  more.epochs = 2;
  Trainer t2(model, d.target, d.train, d.valid, more);
  t2.resume();
  t2.run();
  // An optimizer file of the earlier checkpoint, put in by hand, is refused.
  write_file_atomic(first, old_optimizer);
  Generator other(2);
  Seq2Seq fresh(d.config, other);
  Trainer t3(fresh, d.target, d.train, d.valid, more);
  CHECK_THROWS_WITH_AS(t3.resume(), doctest::Contains("the checkpoint's files do not belong together"), Error);
}

TEST_CASE("trainer_state.json is checked key by key") {
  Toy d = toy(30);
  const Scratch scratch("attend-ckpt-state");
  const std::string dir = scratch.dir.string();
  Generator init(1);
  Seq2Seq model(d.config, init);
  TrainOptions o = options(dir);
  o.max_steps = 2;
  Trainer(model, d.target, d.train, d.valid, o).run();
  const std::string path = fs::path(checkpoint_dir(dir)) / "trainer_state.json";
  const nlohmann::json good = nlohmann::json::parse(read_file(path));
  struct Case {
    const char* key;
    nlohmann::json value;
    const char* message;
  };
  const Case cases[] = {
      {"global_step", -1, "'global_step' must be a count"},
      {"epoch", 0.5, "'epoch' must be a whole number, got 0.5"},
      {"position", "1", "'position' must be a whole number"},
      {"dropout_generator", nlohmann::json::array({0, 0, 0, 0}), "'dropout_generator' is all zeros"},
      {"sampling_generator", nlohmann::json::array({1, 2, 3}), "'sampling_generator' must be an array of 4"},
      {"epoch_steps", 99, "contradict each other"},
      {"best_valid_loss", "low", "'best_valid_loss' must be a number"},
  };
  for (const Case& c : cases) {
    CAPTURE(c.key);
    nlohmann::json bad = good;
    bad[c.key] = c.value;
    write_file_atomic(path, bad.dump());
    Trainer t(model, d.target, d.train, d.valid, o);
    CHECK_THROWS_WITH_AS(t.resume(), doctest::Contains(c.message), Error);
    CHECK_THROWS_WITH_AS(t.resume(), doctest::Contains("trainer_state.json"), Error);
  }
  nlohmann::json missing = good;
  missing.erase("history");
  write_file_atomic(path, missing.dump());
  Trainer t(model, d.target, d.train, d.valid, o);
  CHECK_THROWS_WITH_AS(t.resume(), doctest::Contains("'history'"), Error);
  write_file_atomic(path, good.dump());
  CHECK_NOTHROW(t.resume());
}

TEST_CASE("non-finite weights are never saved, and a model holding them is refused") {
  Toy d = toy(30);
  const Scratch scratch("attend-ckpt-nonfinite");
  const std::string dir = scratch.dir.string();
  Generator init(1);
  Seq2Seq model(d.config, init);
  TrainOptions o = options(dir);
  o.max_steps = 1;
  // The step's loss was finite, then the weights went bad (as a too large lr does).
  TrainHooks hooks;
  hooks.on_step = [&](const StepReport&) { model.project.bias.fill_(INFINITY); };
  Trainer t(model, d.target, d.train, d.valid, o, hooks);
  CHECK_THROWS_WITH_AS(t.run(), doctest::Contains("the weights are not finite after step 1"), Error);
  CHECK(!fs::exists(path_in(dir, "model.safetensors")));  // once saved as "best" by comparing train with valid loss
  CHECK(!has_checkpoint(dir));

  // translate and eval load through load_model_dir, which refuses them.
  Generator init2(1);
  Seq2Seq bad(d.config, init2);
  bad.source_embed.weight.fill_(NAN);
  save_model_description(dir, d.config, d.source, d.target, TokenizerOptions{});
  nn::save(bad, path_in(dir, "model.safetensors"));
  CHECK_THROWS_WITH_AS(load_model_dir(dir), doctest::Contains("the weights are not finite"), Error);
}

TEST_CASE("--detect-anomaly blames the optimizer step that made the weights non-finite") {
  Toy d = toy(30);
  Generator init(1);
  Seq2Seq model(d.config, init);
  TrainOptions o = options("");
  o.optimizer = OptimizerKind::SGD;
  o.lr = 1e300;  // finite, but any gradient times it overflows a float
  o.clip = 0;
  o.detect_anomaly = true;
  Trainer t(model, d.target, d.train, d.valid, o);
  std::string message;
  try {
    t.run();
  } catch (const Error& e) {
    message = e.what();
  }
  CHECK(message.find("anomaly: the optimizer step made the weights non-finite") != std::string::npos);
  CHECK(message.find("at step 1 ") != std::string::npos);
}

TEST_CASE("without validation data the best model is the lowest training loss, compared with training losses") {
  Toy d = toy(30);
  const Scratch scratch("attend-ckpt-novalid");
  const std::string dir = scratch.dir.string();
  Generator init(1);
  Seq2Seq model(d.config, init);
  TrainOptions o = options(dir);
  o.epochs = 3;
  const std::vector<EncodedPair> none;
  Trainer t(model, d.target, d.train, none, o);
  std::vector<EpochReport> reports = t.run();
  REQUIRE(reports.size() == 3);
  std::size_t lowest = 0;
  for (std::size_t i = 1; i < 3; ++i)
    if (reports[i].train_loss < reports[lowest].train_loss) lowest = i;
  CHECK(reports[lowest].best);
  const auto meta = load_safetensors(path_in(dir, "model.safetensors")).metadata;
  CHECK(meta.at("epoch") == std::to_string(lowest + 1));
}

// --max-steps reached at the end of an epoch once began the next one without a
// step: it had no training loss (logged as "nan", then as empty fields), and it
// validated the previous epoch's weights again. The run now stops before it.
TEST_CASE("max_steps reached at an epoch's end stops the run before the next epoch, which is not logged") {
  Toy d = toy(30);  // 24 training pairs: 3 batches of 8
  const Scratch scratch("attend-ckpt-nostep");
  const std::string dir = scratch.dir.string();
  Generator init(1);
  Seq2Seq model(d.config, init);
  TrainOptions o = options(dir);
  o.epochs = 3;
  o.max_steps = 3;
  const std::vector<EncodedPair> none;
  Trainer t(model, d.target, d.train, none, o);
  std::vector<EpochReport> reports = t.run();
  REQUIRE(reports.size() == 1);
  CHECK(reports[0].steps == 3);
  CHECK(reports[0].complete);
  CHECK(reports[0].best);
  CHECK(t.epoch() == 1);  // the checkpoint resumes at epoch 2's start
  CHECK(t.history().size() == 1);
  const std::string log = read_file(path_in(dir, "train_log.csv"));
  CHECK_MESSAGE(log.find("nan") == std::string::npos, log);
  CHECK_MESSAGE(log.find("\n2,") == std::string::npos, log);
  const nlohmann::json state = nlohmann::json::parse(read_file(path_in(dir, "checkpoint/trainer_state.json")));
  CHECK(state.at("history").size() == 1);
  const auto meta = load_safetensors(path_in(dir, "model.safetensors")).metadata;
  CHECK(meta.at("epoch") == "1");
  CHECK(meta.count("valid_loss") == 0);  // there is no validation data, so no "nan" either
}

// A resumed run that its max_steps leaves without a step would only add an
// epoch without a step to the log, at every attempt: run() refuses it.
TEST_CASE("run() refuses a resumed run with no step left, and keeps the log") {
  Toy d = toy(30);  // 24 training pairs: 3 batches of 8
  const Scratch scratch("attend-ckpt-nostep-resume");
  const std::string dir = scratch.dir.string();
  TrainOptions o = options(dir);
  o.epochs = 3;
  o.max_steps = 2;
  {
    Generator init(1);
    Seq2Seq model(d.config, init);
    Trainer(model, d.target, d.train, d.valid, o).run();
  }
  const std::string log = read_file(path_in(dir, "train_log.csv"));
  Generator init(1);
  Seq2Seq model(d.config, init);
  Trainer t(model, d.target, d.train, d.valid, o);
  t.resume();
  CHECK_THROWS_WITH_AS(t.run(),
                       "train: no step is left to take: the run is at step 2 and max_steps is 2; raise the limit to "
                       "continue",
                       Error);
  CHECK(read_file(path_in(dir, "train_log.csv")) == log);
  CHECK(t.history().size() == 1);
}

TEST_CASE("run() refuses a resumed run whose time budget is spent") {
  Toy d = toy(30);
  const Scratch scratch("attend-ckpt-notime-resume");
  const std::string dir = scratch.dir.string();
  TrainOptions o = options(dir);
  o.epochs = 1000000;
  o.minutes = 0.2 / 60;  // 0.2 s
  std::int64_t steps = 0;
  {
    Generator init(1);
    Seq2Seq model(d.config, init);
    Trainer first(model, d.target, d.train, d.valid, o);
    first.run();
    steps = first.global_step();
  }
  Generator init(1);
  Seq2Seq model(d.config, init);
  Trainer t(model, d.target, d.train, d.valid, o);
  t.resume();
  CHECK_THROWS_WITH_AS(t.run(), doctest::Contains("train: no step is left to take: the run has trained"), Error);
  o.minutes = 60;  // a larger budget continues (here for two more steps)
  o.max_steps = steps + 2;
  Trainer more(model, d.target, d.train, d.valid, o);
  more.resume();
  more.run();
  CHECK(more.global_step() == steps + 2);
}

TEST_CASE("TrainOptions are checked at construction, naming the field") {
  Toy d = toy(30);
  Generator init(1);
  Seq2Seq model(d.config, init);
  auto refused = [&](auto change, const char* message) {
    TrainOptions o;
    change(o);
    CHECK_THROWS_WITH_AS(Trainer(model, d.target, d.train, d.valid, o), message, Error);
  };
  refused([](TrainOptions& o) { o.batch = 0; }, "TrainOptions: batch must be positive, got 0");
  refused([](TrainOptions& o) { o.epochs = -1; }, "TrainOptions: epochs must be positive, got -1");
  refused([](TrainOptions& o) { o.minutes = NAN; }, "TrainOptions: minutes must be finite and >= 0 (0: no limit), got nan");
  refused([](TrainOptions& o) { o.max_steps = -3; }, "TrainOptions: max_steps must be >= 0 (0: no limit), got -3");
  refused([](TrainOptions& o) { o.optimizer = static_cast<OptimizerKind>(7); }, "optimizer_name: 7 is not an OptimizerKind");
  refused([](TrainOptions& o) { o.lr = 0; }, "TrainOptions: lr must be positive and finite, got 0");
  refused([](TrainOptions& o) { o.clip = -1; }, "TrainOptions: clip must be finite and >= 0 (0: off), got -1");
  refused([](TrainOptions& o) { o.label_smoothing = 1; }, "TrainOptions: label_smoothing must be in [0, 0.99], got 1");
  refused([](TrainOptions& o) { o.teacher_forcing = 1.5; }, "TrainOptions: teacher_forcing must be in [0, 1], got 1.5");
  refused([](TrainOptions& o) { o.bleu_sentences = -1; }, "TrainOptions: bleu_sentences must be >= 0 (0: none), got -1");
  refused([](TrainOptions& o) { o.curve_every = -1; }, "TrainOptions: curve_every must be >= 0 (0: never), got -1");
  refused([&](TrainOptions& o) { o.valid_references.assign(d.valid.size() + 1, "x"); },
          fmt::format("TrainOptions: valid_references holds {} references for {} validation pairs", d.valid.size() + 1,
                      d.valid.size()).c_str());
  // The optimizer is chosen by its kind; optimizer_name is what config.json and --optimizer say.
  TrainOptions o;
  o.optimizer = OptimizerKind::SGD;
  CHECK(dynamic_cast<optim::SGD*>(&Trainer(model, d.target, d.train, d.valid, o).optimizer()) != nullptr);
  o.optimizer = OptimizerKind::Adadelta;
  CHECK(dynamic_cast<optim::Adadelta*>(&Trainer(model, d.target, d.train, d.valid, o).optimizer()) != nullptr);
  CHECK(std::string(optimizer_name(OptimizerKind::Adam)) == "adam");
  CHECK(std::string(optimizer_name(OptimizerKind::SGD)) == "sgd");
  CHECK(std::string(optimizer_name(OptimizerKind::Adadelta)) == "adadelta");
}

TEST_CASE("stale temporary files of killed processes are removed, nothing else") {
  const Scratch scratch("attend-ckpt-stale");
  const std::string dir = scratch.dir.string();
  fs::create_directories(dir);
  pid_t child = ::fork();
  if (child == 0) ::_exit(0);
  ::waitpid(child, nullptr, 0);  // a process id that no longer runs
  const auto touch = [&](const std::string& name) { write_file_atomic(path_in(dir, name), "x"); };
  touch(fmt::format("last.safetensors.tmp-{}-3", child));
  fs::create_directories(path_in(dir, fmt::format("checkpoint.tmp-{}-7", child)));
  touch(fmt::format("checkpoint.tmp-{}-7/last.safetensors", child));
  touch(fmt::format("train_log.csv.tmp-{}-0", ::getppid()));  // its process still runs
  touch("notes.tmp-old");                                    // not our pattern
  touch(fmt::format("data.tmp-{}-1x", child));               // nor this
  CHECK(remove_stale_temporaries(dir) == 2);
  CHECK(!fs::exists(path_in(dir, fmt::format("last.safetensors.tmp-{}-3", child))));
  CHECK(!fs::exists(path_in(dir, fmt::format("checkpoint.tmp-{}-7", child))));
  CHECK(fs::exists(path_in(dir, fmt::format("train_log.csv.tmp-{}-0", ::getppid()))));
  CHECK(fs::exists(path_in(dir, "notes.tmp-old")));
  CHECK(fs::exists(path_in(dir, fmt::format("data.tmp-{}-1x", child))));
}
