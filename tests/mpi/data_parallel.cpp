// Data-parallel training under MPI (models/train/distributed.hpp, models/train/trainer_distributed.cpp).
// CTest runs this program under `mpirun -np 2` and `-np 3` (tests/CMakeLists.txt);
// every rank runs every test case, and each case makes the same collective calls
// on every rank. Each rank also trains the one-process reference itself (it is
// deterministic), so every rank checks its own parameters against it.
#include <doctest/doctest.h>

#include <filesystem>
#include <optional>

#include <unistd.h>

#include "models/data/dataset.hpp"
#include "models/train/distributed.hpp"
#include "models/data/toy_language.hpp"
#include "models/train/trainer.hpp"
#include "tests/support/scratch.hpp"
#include "tests/support/toy_data.hpp"

using namespace attend;
namespace fs = std::filesystem;

namespace {

Communicator& world() {
  static std::unique_ptr<Communicator> w = connect_world();
  return *w;
}

// n toy sentences, every fifth held out: 37 training pairs for n = 46, so that
// batches of 8 end with a batch of 5, which splits unevenly over 2 or 3 ranks.
using attend::testing::ToyData;
using attend::testing::toy_data;

Seq2SeqConfig small_config(const ToyData& d, double dropout) {
  Seq2SeqConfig c;
  c.source_vocab = d.source.size();
  c.target_vocab = d.target.size();
  c.embed = 6;
  c.hidden = 8;
  c.layers = 2;
  c.dropout = dropout;
  return c;
}

TrainOptions options(std::int64_t batch, std::int64_t max_steps) {
  TrainOptions o;
  o.batch = batch;
  o.epochs = 100;
  o.max_steps = max_steps;
  o.lr = 0.01;
  o.clip = 0.5;  // small enough to clip: the norm must be the global one
  o.bleu_sentences = 0;
  return o;
}

// Trains in float64 and returns the parameters and each step's loss. With comm,
// data-parallel; without, one process.
struct Run {
  std::map<std::string, Tensor> params;
  std::vector<double> losses;
  std::vector<EpochReport> reports;
};
Run train(const ToyData& d, const TrainOptions& o, Communicator* comm, double dropout = 0, std::uint64_t init_seed = 1) {
  Generator init(init_seed);
  auto model = std::make_shared<Seq2Seq>(small_config(d, dropout), init, Float64);
  Run run;
  TrainHooks hooks;
  hooks.on_step = [&](const StepReport& r) { run.losses.push_back(r.loss); };
  Trainer t(*model, d.target, d.train, d.valid, o, hooks);
  if (comm != nullptr) t.distribute(*comm);
  run.reports = t.run();
  run.params = model->state_dict();
  for (auto& [name, p] : run.params) p = p.clone();
  return run;
}

double worst_difference(const Run& a, const Run& b) {
  double worst = 0;
  for (const auto& [name, p] : a.params) worst = std::max(worst, max_abs_diff(p, b.params.at(name)));
  return worst;
}

// A hash of the parameters' bytes: every rank must hold the very same model.
std::uint64_t fingerprint(const Run& run) {
  std::uint64_t h = 1469598103934665603ULL;
  for (const auto& [name, p] : run.params) {
    const auto* bytes = static_cast<const unsigned char*>(p.raw_data());
    for (std::size_t i = 0; i < static_cast<std::size_t>(p.numel()) * dtype_size(p.dtype()); ++i)
      h = (h ^ bytes[i]) * 1099511628211ULL;
  }
  return h;
}

// One directory for all ranks, not made yet: `run` in a scratch directory of
// rank 0 (tests/support/scratch.hpp), which rank 0 removes when the test ends,
// however it ends.
struct SharedScratch {
  std::optional<attend::testing::Scratch> on_root;
  std::string dir;
  explicit SharedScratch(const char* name) {
    if (world().is_root()) {
      on_root.emplace(fmt::format("attend-mpi-{}", name));
      dir = on_root->path("run");
    }
    broadcast_string(world(), dir);
  }
};

}  // namespace

TEST_CASE("K data-parallel steps equal one process on the same global batches, to 1e-10 in float64") {
  REQUIRE(world().size() > 1);
  const ToyData d = toy_data(46);
  REQUIRE(d.train.size() == 37);
  // Batches of 8 (the epoch ends with 5, uneven over 2 and 3 ranks); batches of 2,
  // where with 3 ranks one rank has nothing and must still join every sum.
  for (std::int64_t batch : {8, 2}) {
    CAPTURE(batch);
    const TrainOptions o = options(batch, 12);
    const Run parallel = train(d, o, &world());
    const Run single = train(d, o, nullptr);
    REQUIRE(parallel.losses.size() == 12);
    for (std::size_t i = 0; i < single.losses.size(); ++i)
      CHECK(parallel.losses[i] == doctest::Approx(single.losses[i]).epsilon(1e-10));
    const double worst = worst_difference(parallel, single);
    CHECK_MESSAGE(worst < 1e-10, "rank ", world().rank(), ": largest parameter difference ", worst);
    CHECK(worst_difference(single, train(d, o, nullptr, 0, 2)) > 1e-3);  // the comparison can tell models apart
    // Every rank took the same steps: bit for bit the same parameters.
    const std::uint64_t mine = fingerprint(parallel);
    for (std::uint64_t other : world().all_gather(std::span(&mine, 1))) CHECK(other == mine);
    // The validation loss, split over the ranks and summed, is the one-process one.
    REQUIRE(!parallel.reports.empty());
    CHECK(parallel.reports.back().valid_loss == doctest::Approx(single.reports.back().valid_loss).epsilon(1e-10));
  }
}

TEST_CASE("dropout masks differ from rank to rank and are the same in every run") {
  const ToyData d = toy_data(46);
  auto generator_of_rank = [&] {
    Generator init(1);
    Seq2Seq model(small_config(d, 0.3), init, Float64);
    Trainer t(model, d.target, d.train, d.valid, options(8, 1));
    t.distribute(world());
    return model.dropout_generator().next_u64();
  };
  const std::uint64_t first = generator_of_rank(), again = generator_of_rank();
  CHECK(first == again);
  const std::vector<std::uint64_t> all = world().all_gather(std::span(&first, 1));
  for (std::size_t r = 1; r < all.size(); ++r) CHECK(all[r] != all[0]);
}

TEST_CASE("a resumed data-parallel run continues exactly as an uninterrupted one") {
  const ToyData d = toy_data(46);
  TrainOptions o = options(8, 14);
  o.teacher_forcing = 0.7;  // per-rank sampling generators, as well as dropout's
  const Run straight = train(d, o, &world(), 0.2);
  REQUIRE(straight.losses.size() == 14);

  const SharedScratch scratch("resume");
  const std::string& dir = scratch.dir;
  Run resumed;
  {
    TrainOptions first = o;
    first.out_dir = dir;
    first.max_steps = 6;  // the middle of the second epoch (5 batches each)
    resumed = train(d, first, &world(), 0.2);
    if (world().is_root()) CHECK(fs::exists(fs::path(dir) / "checkpoint" / "trainer_state.json"));
  }
  {
    Generator init(99);  // other weights everywhere: the resume must replace them all
    Seq2Seq model(small_config(d, 0.2), init, Float64);
    TrainOptions second = o;
    second.out_dir = dir;
    TrainHooks hooks;
    hooks.on_step = [&](const StepReport& r) { resumed.losses.push_back(r.loss); };
    Trainer t(model, d.target, d.train, d.valid, second, hooks);
    t.distribute(world());
    t.resume();
    CHECK(t.global_step() == 6);
    t.run();
    resumed.params = model.state_dict();
  }
  REQUIRE(resumed.losses.size() == straight.losses.size());
  for (std::size_t i = 0; i < straight.losses.size(); ++i) {
    CAPTURE(i);
    CHECK(resumed.losses[i] == straight.losses[i]);  // bit for bit
  }
  for (const auto& [name, p] : straight.params) CHECK_MESSAGE(equal(p, resumed.params.at(name)), name);
}

TEST_CASE("a checkpoint written under MPI resumes in one process, and one of one process under MPI") {
  const ToyData d = toy_data(46);
  const TrainOptions o = options(8, 11);
  const Run straight = train(d, o, nullptr);
  auto resume_and_finish = [&](const std::string& dir, Communicator* comm) {
    Generator init(99);
    Seq2Seq model(small_config(d, 0), init, Float64);
    TrainOptions second = o;
    second.out_dir = dir;
    Trainer t(model, d.target, d.train, d.valid, second);
    if (comm != nullptr) t.distribute(*comm);
    t.resume();
    CHECK(t.global_step() == 4);
    t.run();
    Run run;
    run.params = model.state_dict();
    return run;
  };
  TrainOptions first = o;
  first.max_steps = 4;
  SUBCASE("MPI, then one process (rank 0, which has the files)") {
    const SharedScratch scratch("to-single");
    first.out_dir = scratch.dir;
    train(d, first, &world());
    if (world().is_root()) {
      const double worst = worst_difference(resume_and_finish(first.out_dir, nullptr), straight);
      CHECK_MESSAGE(worst < 1e-10, "largest parameter difference ", worst);
    }
  }
  SUBCASE("one process (rank 0), then MPI") {
    const SharedScratch scratch("from-single");
    first.out_dir = scratch.dir;
    if (world().is_root()) train(d, first, nullptr);
    const double worst = worst_difference(resume_and_finish(first.out_dir, &world()), straight);
    CHECK_MESSAGE(worst < 1e-10, "rank ", world().rank(), ": largest parameter difference ", worst);
  }
}

TEST_CASE("a failure on one rank stops every rank with the same message") {
  const ToyData d = toy_data(46);
  const int last = world().size() - 1;
  SUBCASE("an exception on the last rank (anomaly mode there, a NaN bias there)") {
    Generator init(1);
    Seq2Seq model(small_config(d, 0), init, Float64);
    TrainOptions o = options(8, 3);
    o.detect_anomaly = world().rank() == last;
    Trainer t(model, d.target, d.train, d.valid, o);
    t.distribute(world());
    if (world().rank() == last) model.project.bias.fill_(NAN);
    const std::string expected = fmt::format("rank {} of {}: anomaly: the forward of 'linear_cross_entropy'", last,
                                             world().size());
    CHECK_THROWS_WITH_AS(t.run(), doctest::Contains(expected.c_str()), CollectiveError);
  }
  SUBCASE("a NaN loss on one rank: the global loss is NaN, and every rank names the step") {
    Generator init(1);
    Seq2Seq model(small_config(d, 0), init, Float64);
    Trainer t(model, d.target, d.train, d.valid, options(8, 3));
    t.distribute(world());
    if (world().rank() == last) model.project.bias.fill_(NAN);
    CHECK_THROWS_WITH_AS(t.run(),
                         "training stopped: the loss is nan at step 1 (epoch 1, batch 1 of 5); rerun with "
                         "--detect-anomaly to find the first op that made a non-finite value",
                         CollectiveError);
  }
  SUBCASE("a resume that rank 0 cannot read") {
    Generator init(1);
    Seq2Seq model(small_config(d, 0), init, Float64);
    TrainOptions o = options(8, 3);
    const SharedScratch scratch("missing");
    o.out_dir = scratch.dir;
    Trainer t(model, d.target, d.train, d.valid, o);
    t.distribute(world());
    CHECK_THROWS_WITH_AS(t.resume(), doctest::Contains("rank 0 of"), CollectiveError);
  }
}

TEST_CASE("a stop request on one rank stops every rank after the same step, with a checkpoint") {
  const ToyData d = toy_data(46);
  Generator init(1);
  Seq2Seq model(small_config(d, 0), init, Float64);
  TrainOptions o = options(8, 0);
  const SharedScratch scratch("stop");
  o.out_dir = scratch.dir;
  std::atomic<bool> stop{false};
  TrainHooks hooks;
  hooks.stop = &stop;
  hooks.on_step = [&](const StepReport& r) {
    if (r.global_step == 2 && world().rank() == world().size() - 1) stop = true;
  };
  Trainer t(model, d.target, d.train, d.valid, o, hooks);
  t.distribute(world());
  t.run();
  CHECK(t.global_step() == 3);  // the request rides on step 3's sum; all stop before step 4
  if (world().is_root()) CHECK(fs::exists(fs::path(o.out_dir) / "checkpoint" / "trainer_state.json"));
}

// The SentencePiece model of `attend train --subword` (models/data/dataset.hpp's
// SubwordSetup::trainer): trained by rank 0 alone, every rank holds its bytes.
// The other ranks ask for another vocabulary size here, which only a rank that
// trained a model of its own would get.
TEST_CASE("a subword model is trained on rank 0 alone, and every rank holds its very bytes") {
  ToyCorpusOptions toy;
  toy.n = 300;
  toy.max_len = 12;
  DatasetOptions o;
  o.subword.type = "unigram";
  o.subword.vocab_size = world().is_root() ? 120 : 100;
  o.subword.trainer = subword_trainer_on_root(world());
  const Dataset d = build_dataset(toy_pairs(toy), o);
  REQUIRE(d.codecs.source.is_subword());
  const std::string& bytes = d.codecs.source.subword()->bytes();
  CHECK(d.codecs.source.subword()->size() == 120);
  std::uint64_t mine = 1469598103934665603ULL;
  for (char c : bytes) mine = (mine ^ static_cast<unsigned char>(c)) * 1099511628211ULL;
  for (std::uint64_t other : world().all_gather(std::span(&mine, 1))) CHECK(other == mine);
}

TEST_CASE("a subword training that fails on rank 0 fails on every rank, with its message") {
  SubwordTrainOptions o;
  o.vocab_size = 5000;  // far more pieces than three letters allow
  CHECK_THROWS_WITH_AS(subword_trainer_on_root(world())({"a b c", "b c a"}, o),
                       doctest::Contains("rank 0 of"), CollectiveError);
}
