#pragma once
// Parallel text for training: reading "source<TAB>target" lines, a seeded
// train/validation split, length filtering, and batches of padded id tensors in
// an order that is a function of (seed, epoch) alone, so a run can resume
// mid-epoch with the same data order.
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/dtype.hpp"
#include "core/tensor.hpp"
#include "models/data/tokenizer.hpp"
#include "models/data/vocabulary.hpp"

namespace attend {

struct SentencePair {
  std::string source;
  std::string target;
  bool operator==(const SentencePair&) const = default;
};

struct ParallelText {
  std::vector<SentencePair> pairs;
  // "corpus.tsv:7: no tab between source and target; line skipped", one per skipped line.
  std::vector<std::string> warnings;
  std::int64_t skipped = 0;
};

// One pair per line: source, one tab, target. A trailing '\r' is removed. A line
// that is empty, has no tab or more than one, has an empty side (only spaces) or
// is not valid UTF-8 is skipped with a warning naming name:line; with strict=true
// it throws attend::Error instead: "read_tsv: corpus.tsv:7: no tab between source
// and target".
ParallelText parse_tsv(std::string_view content, std::string_view name, bool strict = false);
ParallelText read_tsv(const std::string& path, bool strict = false);  // name = path

// Train/validation split by a seeded shuffle: round(n * valid_fraction) indices go
// to valid. Both lists are sorted (the corpus order is kept within each part).
struct Split {
  std::vector<std::int64_t> train;
  std::vector<std::int64_t> valid;
};
Split split_indices(std::int64_t n, double valid_fraction, std::uint64_t seed);

template <class T>
std::vector<T> subset(const std::vector<T>& items, const std::vector<std::int64_t>& indices) {
  std::vector<T> out;
  out.reserve(indices.size());
  for (std::int64_t i : indices) out.push_back(items.at(static_cast<std::size_t>(i)));
  return out;
}

// A sentence pair as token ids, without <s> or </s> (the batch adds them).
struct EncodedPair {
  std::vector<std::int64_t> source;
  std::vector<std::int64_t> target;
};

// Tokenizes both sides and maps them to ids (unknown tokens -> <unk>).
std::vector<EncodedPair> encode_pairs(const std::vector<SentencePair>& pairs, const Vocabulary& source_vocab,
                                      const Vocabulary& target_vocab, const TokenizerOptions& options = {});

// Keeps the pairs whose source and target both have min_tokens..max_tokens tokens.
struct LengthLimits {
  std::int64_t min_tokens = 1;
  std::int64_t max_tokens = 100;
};
bool within_limits(const EncodedPair& pair, const LengthLimits& limits);
std::vector<EncodedPair> filter_by_length(const std::vector<EncodedPair>& pairs, const LengthLimits& limits,
                                          std::int64_t* dropped = nullptr);

// B sentences padded to the longest in the batch: S = max source length (+1 with
// source_eos), T = max target length + 1.
struct Batch {
  Indices source;                            // (B, S) source ids, <pad> after the end
  std::vector<std::int64_t> source_lengths;  // (B) real tokens per row
  Tensor source_mask;                        // (B, S) 1 for a real token, 0 for padding
  Indices decoder_input;                     // (B, T) <s> y1 .. yn, then <pad>
  Indices decoder_target;                    // (B, T) y1 .. yn </s>, then <pad>
  std::vector<std::int64_t> target_lengths;  // (B) n + 1: the real positions of decoder_target
  Tensor target_mask;                        // (B, T) 1 where decoder_target is not <pad>
  std::int64_t target_tokens = 0;            // sum of target_lengths (the loss's token count)
  std::vector<std::int64_t> example_ids;     // (B) which examples, for mapping outputs back
  std::int64_t size() const { return static_cast<std::int64_t>(source_lengths.size()); }
};

struct BatchOptions {
  DType mask_dtype = Float32;
  bool source_eos = false;  // append </s> to every source sentence
};

// Throws for an empty list or an example with an empty source (its mask row would
// be all zeros); an empty target is fine (input <s>, target </s>).
Batch make_batch(const std::vector<EncodedPair>& data, std::span<const std::int64_t> example_ids,
                 const BatchOptions& options = {});

struct BatchingOptions {
  std::int64_t batch_size = 32;     // sentences per batch
  std::int64_t chunk_batches = 50;  // sort by length within chunks of batch_size * chunk_batches
  bool shuffle = true;              // false: corpus order, no bucketing (for evaluation)
};

// The batches of one epoch, as lists of example indices. With shuffle: shuffle all
// examples, cut them into chunks, sort each chunk by (source length, target
// length) (stable, so ties keep the shuffled order), cut each chunk into batches
// and shuffle the batch order. The generator is seeded from (seed, epoch) alone,
// so batch k of epoch e is the same in every run and after a resume.
std::vector<std::vector<std::int64_t>> epoch_order(const std::vector<EncodedPair>& data,
                                                   const BatchingOptions& options, std::uint64_t seed,
                                                   std::int64_t epoch);

// Walks one epoch's batches, starting at any batch (to resume a run). Keeps a
// pointer to `data`, which must outlive it.
class BatchIterator {
 public:
  BatchIterator(const std::vector<EncodedPair>& data, const BatchingOptions& options, std::uint64_t seed,
                std::int64_t epoch, std::int64_t start_batch = 0, const BatchOptions& batch_options = {});
  bool done() const { return position_ >= size(); }
  Batch next();  // throws when done
  // The next batch's example indices, without making the batch (data-parallel
  // training makes each rank's share of it: models/train/distributed.hpp). Throws when done.
  const std::vector<std::int64_t>& next_ids();
  std::int64_t position() const { return position_; }  // index of the next batch
  std::int64_t size() const { return static_cast<std::int64_t>(order_.size()); }
  const std::vector<std::vector<std::int64_t>>& order() const { return order_; }

 private:
  const std::vector<EncodedPair>* data_;
  BatchOptions batch_options_;
  std::vector<std::vector<std::int64_t>> order_;
  std::int64_t position_ = 0;
};

}  // namespace attend
