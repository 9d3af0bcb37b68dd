// The trainer's validation BLEU scores against the references as written, not
// against the targets decoded from their ids: there a word outside the
// vocabulary is <unk>, and a model that writes <unk> got credit for it (a words
// model's validation BLEU read far above what attend eval gave).
#include <doctest/doctest.h>

#include <cmath>

#include "models/train/trainer.hpp"

using namespace attend;

TEST_CASE("validation BLEU: a model writing <unk> earns nothing against the references as written") {
  TokenCounts counts;
  count_tokens(counts, {"le", "chat", "dort"});
  const Vocabulary vocab = Vocabulary::build(counts);
  Seq2SeqConfig c;
  c.source_vocab = vocab.size();
  c.target_vocab = vocab.size();
  c.embed = 4;
  c.hidden = 6;
  Generator init(3);
  Seq2Seq model(c, init);
  model.project.bias.data<float>()[Vocabulary::kUnk] = 100.0f;  // <unk> at every step
  // "le zèbre dort": zèbre is not in the vocabulary, so its target ids read "le <unk> dort"
  const std::vector<EncodedPair> valid = {{vocab.encode({"le", "chat", "dort"}), vocab.encode({"le", "zèbre", "dort"})}};
  REQUIRE(valid[0].target[1] == Vocabulary::kUnk);
  TrainOptions o;
  o.batch = 1;
  Trainer trainer(model, vocab, valid, valid, o);
  const double against_ids = trainer.evaluate_bleu(valid, 1);
  const double as_written = trainer.evaluate_bleu(valid, 1, {"le zèbre dort"});
  CHECK(against_ids > 0);     // the <unk>s of the hypothesis match the reference's <unk>
  CHECK(as_written == 0.0);   // nothing of "<unk> <unk> ..." is in "le zèbre dort"
  CHECK_THROWS_AS(trainer.evaluate_bleu(valid, 1, {"a", "b"}), Error);
}
