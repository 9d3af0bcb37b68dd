// models/train/trainer and models/model_dir: a resumed run equals an uninterrupted
// one, checkpoints are complete and loadable, a non-finite loss stops training.
#include <doctest/doctest.h>

#include <chrono>
#include <filesystem>

#include "core/io/file_io.hpp"
#include "models/model_dir.hpp"
#include "models/data/toy_language.hpp"
#include "models/train/trainer.hpp"
#include "tests/support/scratch.hpp"
#include "tests/support/toy_data.hpp"

using namespace attend;
namespace fs = std::filesystem;

namespace {

using attend::testing::Scratch;
using attend::testing::ToyData;
using attend::testing::toy_data;

Seq2SeqConfig small_config(const ToyData& d) {
  Seq2SeqConfig c;
  c.source_vocab = d.source.size();
  c.target_vocab = d.target.size();
  c.embed = 8;
  c.hidden = 12;
  c.layers = 2;
  c.dropout = 0.1;  // so that the dropout generators must be restored too
  return c;
}

}  // namespace

TEST_CASE("a resumed run's losses equal an uninterrupted run's") {
  ToyData d = toy_data(50);  // 40 training pairs: 5 batches of 8 per epoch
  TrainOptions o;
  o.batch = 8;
  o.epochs = 3;
  o.lr = 0.01;
  o.teacher_forcing = 0.8;  // scheduled sampling draws from its own generator
  o.bleu_sentences = 4;

  std::vector<double> straight;
  {
    Generator init(1);
    Seq2Seq model(small_config(d), init);
    TrainHooks hooks;
    hooks.on_step = [&](const StepReport& r) { straight.push_back(r.loss); };
    Trainer t(model, d.target, d.train, d.valid, o, hooks);
    t.run();
  }
  REQUIRE(straight.size() == 15);

  const Scratch scratch("attend-test-resume");
  const std::string dir = scratch.dir.string();
  std::vector<double> resumed;
  {
    Generator init(1);
    Seq2Seq model(small_config(d), init);
    TrainOptions first = o;
    first.out_dir = dir;
    first.max_steps = 7;  // stops in the middle of the second epoch
    TrainHooks hooks;
    hooks.on_step = [&](const StepReport& r) { resumed.push_back(r.loss); };
    Trainer t(model, d.target, d.train, d.valid, first, hooks);
    t.run();
    CHECK(t.global_step() == 7);
  }
  {
    Generator init(99);  // different initial weights: resume must overwrite them all
    Seq2Seq model(small_config(d), init);
    TrainOptions second = o;
    second.out_dir = dir;
    TrainHooks hooks;
    hooks.on_step = [&](const StepReport& r) { resumed.push_back(r.loss); };
    Trainer t(model, d.target, d.train, d.valid, second, hooks);
    t.resume();
    CHECK(t.global_step() == 7);
    t.run();
  }
  REQUIRE(resumed.size() == straight.size());
  for (std::size_t i = 0; i < straight.size(); ++i) {
    CAPTURE(i);
    CHECK(resumed[i] == straight[i]);  // bit for bit
  }
}

TEST_CASE("checkpoints are complete, loadable and written without leftovers") {
  ToyData d = toy_data(30);
  const Scratch scratch("attend-test-checkpoint");
  const std::string dir = scratch.dir.string();
  Generator init(2);
  Seq2SeqConfig config = small_config(d);
  Seq2Seq model(config, init);
  save_model_description(dir, config, d.source, d.target, TokenizerOptions{}, {{"note", "test"}});
  TrainOptions o;
  o.batch = 8;
  o.epochs = 2;
  o.out_dir = dir;
  o.bleu_sentences = 3;
  Trainer t(model, d.target, d.train, d.valid, o);
  std::vector<EpochReport> reports = t.run();
  REQUIRE(reports.size() == 2);
  CHECK(reports[0].best);
  CHECK(std::isfinite(reports[1].valid_loss));
  CHECK(reports[1].valid_perplexity == doctest::Approx(std::exp(reports[1].valid_loss)));
  for (const char* f : {"config.json", "model.safetensors", "checkpoint/last.safetensors", "checkpoint/optimizer.safetensors",
                        "checkpoint/trainer_state.json", "train_log.csv", "source.vocab", "target.vocab"})
    CHECK_MESSAGE(fs::exists(fs::path(dir) / f), f);
  for (const auto& entry : fs::directory_iterator(dir))  // no temporary files left behind
    CHECK(entry.path().filename().string().find(".tmp") == std::string::npos);
  std::string log = read_file((fs::path(dir) / "train_log.csv").string());
  CHECK(std::count(log.begin(), log.end(), '\n') == 3);  // header + one row per epoch
  LoadedModel loaded = load_model_dir(dir, "checkpoint/last.safetensors");
  CHECK(loaded.info["note"] == "test");
  CHECK(loaded.target_vocab.tokens() == d.target.tokens());
  auto a = model.state_dict(), b = loaded.model->state_dict();
  for (const auto& [name, tensor] : a) CHECK_MESSAGE(equal(tensor, b.at(name)), name);
  const std::string missing = dir + "/nowhere: not a model directory (it does not exist)";
  CHECK_THROWS_WITH_AS(load_model_dir(dir + "/nowhere"), missing.c_str(), Error);
}

TEST_CASE("a non-finite loss stops training and names the step") {
  ToyData d = toy_data(20);
  Generator init(3);
  Seq2Seq model(small_config(d), init);
  model.project.bias.fill_(NAN);
  TrainOptions o;
  o.batch = 8;
  Trainer t(model, d.target, d.train, d.valid, o);
  CHECK_THROWS_WITH_AS(t.run(),
                       "training stopped: the loss is nan at step 1 (epoch 1, batch 1 of 2); rerun with --detect-anomaly "
                       "to find the first op that made a non-finite value",
                       Error);
  o.detect_anomaly = true;
  Trainer anomalous(model, d.target, d.train, d.valid, o);
  // The NaN bias first shows in the output projection, which Seq2Seq::loss fuses with the loss.
  CHECK_THROWS_WITH_AS(anomalous.run(),
                       doctest::Contains("anomaly: the forward of 'linear_cross_entropy' produced a non-finite value"),
                       Error);
}

TEST_CASE("a stop request saves and returns") {
  ToyData d = toy_data(20);
  const Scratch scratch("attend-test-stop");
  const std::string dir = scratch.dir.string();
  Generator init(4);
  Seq2Seq model(small_config(d), init);
  TrainOptions o;
  o.batch = 4;
  o.out_dir = dir;
  std::atomic<bool> stop{false};
  TrainHooks hooks;
  hooks.stop = &stop;
  hooks.on_step = [&](const StepReport& r) {
    if (r.global_step == 2) stop = true;
  };
  Trainer t(model, d.target, d.train, d.valid, o, hooks);
  t.run();
  CHECK(t.global_step() == 2);
  CHECK(fs::exists(fs::path(dir) / "checkpoint" / "trainer_state.json"));
}

// A time budget spans epochs: the time of finished epochs must count once. (It
// once counted again at every epoch's end, and a 8:30 run stopped after 4:20.)
TEST_CASE("a time budget is spent in full, over many epochs, and counted once") {
  ToyData d = toy_data(20);
  Generator init(5);
  Seq2Seq model(small_config(d), init);
  TrainOptions o;
  o.batch = 4;
  o.epochs = 100000;
  o.minutes = 1.5 / 60;  // 1.5 s: dozens of these tiny epochs
  o.bleu_sentences = 0;
  Trainer t(model, d.target, d.train, d.valid, o);
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<EpochReport> reports = t.run();
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  REQUIRE(reports.size() >= 3);  // several epochs ran, so the bug would have shown
  CHECK(reports.back().elapsed_seconds >= 1.5);
  CHECK(wall >= 1.5);
  // Each report's elapsed time is the time since the run began, not a sum of sums.
  CHECK(reports.back().elapsed_seconds <= wall + 1e-3);
  for (std::size_t i = 1; i < reports.size(); ++i) CHECK(reports[i].elapsed_seconds >= reports[i - 1].elapsed_seconds);
}
