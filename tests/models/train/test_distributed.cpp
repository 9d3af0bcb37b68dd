// models/train/distributed: the parts that need no second process (sharding, token
// weights, the gradient buffer, failure agreement, the launcher's environment).
// The data-parallel training itself runs under mpirun: tests/mpi/.
#include <doctest/doctest.h>

#include <cstdlib>

#include "models/train/distributed.hpp"

using namespace attend;

TEST_CASE("shard_range splits a batch into contiguous shares that differ by at most one") {
  for (std::int64_t n : {0, 1, 2, 5, 8, 37}) {
    for (int ranks : {1, 2, 3, 4}) {
      CAPTURE(n);
      CAPTURE(ranks);
      std::int64_t next = 0;
      for (int r = 0; r < ranks; ++r) {
        const ShardRange s = shard_range(n, r, ranks);
        CHECK(s.begin == next);
        CHECK(s.end - s.begin >= n / ranks);
        CHECK(s.end - s.begin <= n / ranks + 1);
        next = s.end;
      }
      CHECK(next == n);
    }
  }
  CHECK(shard_range(5, 0, 3).end == 2);  // 2, 2, 1: the larger shares first
  CHECK(shard_range(5, 2, 3).begin == 4);
  CHECK(shard_range(1, 2, 3).begin == shard_range(1, 2, 3).end);  // a rank may have nothing
  CHECK_THROWS_WITH_AS(shard_range(4, 3, 3), "shard_range: rank 3 of 3 ranks", Error);
}

TEST_CASE("target_tokens counts each target plus </s>, as make_batch does") {
  std::vector<EncodedPair> data = {{{4, 5}, {6, 7, 8}}, {{4}, {}}, {{5, 5, 5}, {9}}};
  const std::vector<std::int64_t> ids = {0, 2, 1};
  CHECK(target_tokens(data, ids) == 4 + 2 + 1);
  CHECK(target_tokens(data, ids) == make_batch(data, ids).target_tokens);
  const std::vector<std::int64_t> bad = {3};
  CHECK_THROWS_WITH_AS(target_tokens(data, bad), "target_tokens: example 3 is out of range for 3 examples", Error);
}

TEST_CASE("one process takes the whole batch, with weight 1") {
  SingleProcess one;
  std::vector<EncodedPair> data = {{{4, 5}, {6, 7, 8}}, {{4}, {}}};
  const std::vector<std::int64_t> ids = {1, 0};
  Shard s = take_shard(one, data, ids);
  CHECK(s.batch.size() == 2);
  CHECK(s.tokens == 5);
  CHECK(s.global_tokens == 5);
  CHECK(s.weight() == 1.0);
}

TEST_CASE("GradientSum scales by the weight, keeps undefined gradients undefined and returns the weighted loss") {
  SingleProcess one;
  Tensor a = tensor({1, 2, 3}, Float64).requires_grad_();
  Tensor b = tensor({4, 5}, Float64).requires_grad_();
  a.set_grad(tensor({0.5, -1, 2}, Float64));
  GradientSum sum(one, {a, b});
  const GradientTotals t = sum.sum(0.25, 3.0, {.stop = true});
  CHECK(equal(a.grad(), tensor({0.125, -0.25, 0.5}, Float64)));
  CHECK_FALSE(b.grad().defined());  // no rank had one: the optimizer skips it, as in one process
  CHECK(t.loss == 0.75);
  CHECK(t.stop);
  CHECK_FALSE(t.time_up);
  CHECK(t.failed_ranks == 0);
  const GradientTotals failed = sum.sum(1.0, 3.0, {.failed = true});  // a failed rank sends nothing
  CHECK(failed.failed_ranks == 1);
  CHECK(failed.loss == 0);
  CHECK_FALSE(a.grad().defined());
  Tensor c = tensor({1}, Float32).requires_grad_();
  CHECK_THROWS_WITH_AS(GradientSum(one, {a, c}),
                       "GradientSum: the parameters must share one dtype, got float64 and float32", Error);
}

TEST_CASE("agree_on_failure throws a CollectiveError when a rank failed, and nothing otherwise") {
  SingleProcess one;
  CHECK_NOTHROW(agree_on_failure(one, false, "unused"));
  CHECK_THROWS_WITH_AS(agree_on_failure(one, true, "disk full"), "disk full", CollectiveError);
  CHECK_NOTHROW(check_same_on_every_rank(one, 42, "data"));
}

TEST_CASE("broadcast helpers leave one process's values alone") {
  SingleProcess one;
  std::string text = "hello";
  broadcast_string(one, text);
  CHECK(text == "hello");
  std::map<std::string, Tensor> m = {{"x", tensor({1, 2}, Float64)}};
  broadcast_tensor_map(one, m);
  CHECK(equal(m.at("x"), tensor({1, 2}, Float64)));
}

TEST_CASE("the launcher's environment says how many processes it started") {
  ::unsetenv("OMPI_COMM_WORLD_SIZE");
  ::unsetenv("PMI_SIZE");
  CHECK(launched_processes() == 1);
  CHECK(connect_world()->size() == 1);  // no launcher: one process, MPI or not
  ::setenv("PMI_SIZE", "4", 1);
  CHECK(launched_processes() == 4);
  ::setenv("OMPI_COMM_WORLD_SIZE", "3", 1);
  CHECK(launched_processes() == 3);
  ::setenv("OMPI_COMM_WORLD_SIZE", "three", 1);  // not a count: the next variable decides
  CHECK(launched_processes() == 4);
  ::unsetenv("OMPI_COMM_WORLD_SIZE");
  ::setenv("PMI_SIZE", "1", 1);
  CHECK(connect_world()->size() == 1);
  ::unsetenv("PMI_SIZE");
  ::unsetenv("OMPI_COMM_WORLD_RANK");
  ::setenv("PMI_RANK", "2", 1);
  CHECK(launched_rank() == 2);
  ::unsetenv("PMI_RANK");
  CHECK(launched_rank() == 0);
  if (!built_with_mpi()) {
    ::setenv("OMPI_COMM_WORLD_SIZE", "2", 1);
    CHECK_THROWS_WITH_AS(connect_world(), doctest::Contains("this attend was built without MPI, but mpirun started 2"),
                         Error);
    ::unsetenv("OMPI_COMM_WORLD_SIZE");
  }
}
