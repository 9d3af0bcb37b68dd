#include "models/data/corpus.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "core/error.hpp"
#include "core/io/limits.hpp"
#include "core/random.hpp"

namespace attend {
namespace {

bool blank(std::string_view s) { return s.find_first_not_of(" \t\v\f") == std::string_view::npos; }

static_assert(limits::kMaxLineBytes == 65536, "update the message of line_problem");

// Why a line cannot be used, or nullptr.
const char* line_problem(std::string_view line) {
  if (line.empty()) return "empty line";
  if (line.size() > static_cast<std::size_t>(limits::kMaxLineBytes))
    return "line longer than the limit of 65536 bytes (core/io/limits.hpp)";
  if (!valid_utf8(line)) return "invalid UTF-8";
  std::size_t tab = line.find('\t');
  if (tab == std::string_view::npos) return "no tab between source and target";
  if (line.find('\t', tab + 1) != std::string_view::npos) return "more than one tab";
  if (blank(line.substr(0, tab))) return "empty source";
  if (blank(line.substr(tab + 1))) return "empty target";
  return nullptr;
}

template <class T>
void shuffle(std::vector<T>& v, Generator& gen) {  // Fisher-Yates, our own so it is the same everywhere
  for (std::size_t i = v.size(); i > 1; --i)
    std::swap(v[i - 1], v[static_cast<std::size_t>(gen.randint(static_cast<std::int64_t>(i)))]);
}

// One generator per (seed, epoch): the epoch is folded into the seed, which
// splitmix64 then scrambles inside Generator.
Generator epoch_generator(std::uint64_t seed, std::int64_t epoch) {
  return Generator(seed ^ (0x9E3779B97F4A7C15ULL * (static_cast<std::uint64_t>(epoch) + 1)));
}

Tensor mask_of(const std::vector<std::int64_t>& lengths, std::int64_t width, DType dtype) {
  Tensor mask = zeros({static_cast<std::int64_t>(lengths.size()), width}, dtype);
  dispatch(dtype, [&](auto zero) {
    using T = decltype(zero);
    T* m = mask.data<T>();
    for (std::size_t b = 0; b < lengths.size(); ++b)
      std::fill_n(m + static_cast<std::int64_t>(b) * width, lengths[b], T(1));
  });
  return mask;
}

}  // namespace

ParallelText parse_tsv(std::string_view content, std::string_view name, bool strict) {
  ParallelText text;
  if (content.starts_with("\xEF\xBB\xBF")) content.remove_prefix(3);  // a UTF-8 byte order mark
  std::int64_t line_number = 0;
  for (std::size_t begin = 0; begin < content.size();) {
    std::size_t end = content.find('\n', begin);
    if (end == std::string_view::npos) end = content.size();
    std::string_view line = content.substr(begin, end - begin);
    begin = end + 1;
    ++line_number;
    if (line.ends_with('\r')) line.remove_suffix(1);
    if (const char* problem = line_problem(line)) {
      if (strict) fail("read_tsv: {}:{}: {}", name, line_number, problem);
      text.warnings.push_back(fmt::format("{}:{}: {}; line skipped", name, line_number, problem));
      ++text.skipped;
      continue;
    }
    std::size_t tab = line.find('\t');
    text.pairs.push_back({std::string(line.substr(0, tab)), std::string(line.substr(tab + 1))});
  }
  return text;
}

ParallelText read_tsv(const std::string& path, bool strict) {
  // A regular file of bounded size: /dev/zero or a FIFO would otherwise be read forever.
  return parse_tsv(limits::read_bounded_file(path, "read_tsv"), path, strict);
}

Split split_indices(std::int64_t n, double valid_fraction, std::uint64_t seed) {
  if (n < 0) fail("split_indices: negative count {}", n);
  if (!(valid_fraction >= 0.0 && valid_fraction <= 1.0))
    fail("split_indices: valid_fraction must be in [0, 1], got {}", valid_fraction);
  std::vector<std::int64_t> order(static_cast<std::size_t>(n));
  std::iota(order.begin(), order.end(), 0);
  Generator gen(seed);
  shuffle(order, gen);
  auto n_valid = static_cast<std::size_t>(std::llround(static_cast<double>(n) * valid_fraction));
  Split split;
  split.valid.assign(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(n_valid));
  split.train.assign(order.begin() + static_cast<std::ptrdiff_t>(n_valid), order.end());
  std::sort(split.valid.begin(), split.valid.end());
  std::sort(split.train.begin(), split.train.end());
  return split;
}

std::vector<EncodedPair> encode_pairs(const std::vector<SentencePair>& pairs, const Vocabulary& source_vocab,
                                      const Vocabulary& target_vocab, const TokenizerOptions& options) {
  std::vector<EncodedPair> out;
  out.reserve(pairs.size());
  for (const SentencePair& pair : pairs)
    out.push_back({source_vocab.encode(tokenize(pair.source, options)),
                   target_vocab.encode(tokenize(pair.target, options))});
  return out;
}

bool within_limits(const EncodedPair& pair, const LengthLimits& limits) {
  const auto ok = [&](std::size_t n) {
    auto len = static_cast<std::int64_t>(n);
    return len >= limits.min_tokens && len <= limits.max_tokens;
  };
  return ok(pair.source.size()) && ok(pair.target.size());
}

std::vector<EncodedPair> filter_by_length(const std::vector<EncodedPair>& pairs, const LengthLimits& limits,
                                          std::int64_t* dropped) {
  if (limits.min_tokens > limits.max_tokens)
    fail("filter_by_length: min_tokens {} is greater than max_tokens {}", limits.min_tokens, limits.max_tokens);
  std::vector<EncodedPair> kept;
  for (const EncodedPair& pair : pairs)
    if (within_limits(pair, limits)) kept.push_back(pair);
  if (dropped) *dropped = static_cast<std::int64_t>(pairs.size() - kept.size());
  return kept;
}

Batch make_batch(const std::vector<EncodedPair>& data, std::span<const std::int64_t> example_ids,
                 const BatchOptions& options) {
  if (example_ids.empty()) fail("make_batch: no examples");
  const auto B = static_cast<std::int64_t>(example_ids.size());
  Batch batch;
  std::int64_t S = 0, T = 0;
  for (std::int64_t id : example_ids) {
    if (id < 0 || id >= static_cast<std::int64_t>(data.size()))
      fail("make_batch: example {} is out of range for {} examples", id, data.size());
    const EncodedPair& pair = data[static_cast<std::size_t>(id)];
    if (pair.source.empty()) fail("make_batch: example {} has an empty source", id);
    std::int64_t source_len = static_cast<std::int64_t>(pair.source.size()) + (options.source_eos ? 1 : 0);
    std::int64_t target_len = static_cast<std::int64_t>(pair.target.size()) + 1;  // + </s>
    batch.source_lengths.push_back(source_len);
    batch.target_lengths.push_back(target_len);
    batch.target_tokens += target_len;
    S = std::max(S, source_len);
    T = std::max(T, target_len);
  }
  std::vector<std::int64_t> source(static_cast<std::size_t>(B * S), Vocabulary::kPad);
  std::vector<std::int64_t> input(static_cast<std::size_t>(B * T), Vocabulary::kPad);
  std::vector<std::int64_t> target(static_cast<std::size_t>(B * T), Vocabulary::kPad);
  for (std::int64_t b = 0; b < B; ++b) {
    const EncodedPair& pair = data[static_cast<std::size_t>(example_ids[static_cast<std::size_t>(b)])];
    auto row = static_cast<std::size_t>(b * S);
    std::copy(pair.source.begin(), pair.source.end(), source.begin() + static_cast<std::ptrdiff_t>(row));
    if (options.source_eos) source[row + pair.source.size()] = Vocabulary::kEos;
    // decoder_input = <s> y1 .. yn, decoder_target = y1 .. yn </s>: the target is the input shifted left.
    row = static_cast<std::size_t>(b * T);
    input[row] = Vocabulary::kBos;
    std::copy(pair.target.begin(), pair.target.end(), input.begin() + static_cast<std::ptrdiff_t>(row + 1));
    std::copy(pair.target.begin(), pair.target.end(), target.begin() + static_cast<std::ptrdiff_t>(row));
    target[row + pair.target.size()] = Vocabulary::kEos;
  }
  batch.source = Indices(std::move(source), Shape{B, S});
  batch.decoder_input = Indices(std::move(input), Shape{B, T});
  batch.decoder_target = Indices(std::move(target), Shape{B, T});
  batch.source_mask = mask_of(batch.source_lengths, S, options.mask_dtype);
  batch.target_mask = mask_of(batch.target_lengths, T, options.mask_dtype);
  batch.example_ids.assign(example_ids.begin(), example_ids.end());
  return batch;
}

std::vector<std::vector<std::int64_t>> epoch_order(const std::vector<EncodedPair>& data,
                                                   const BatchingOptions& options, std::uint64_t seed,
                                                   std::int64_t epoch) {
  if (options.batch_size < 1) fail("epoch_order: batch_size must be at least 1, got {}", options.batch_size);
  if (options.chunk_batches < 1)
    fail("epoch_order: chunk_batches must be at least 1, got {}", options.chunk_batches);
  if (epoch < 0) fail("epoch_order: negative epoch {}", epoch);
  const auto n = static_cast<std::int64_t>(data.size());
  std::vector<std::int64_t> order(static_cast<std::size_t>(n));
  std::iota(order.begin(), order.end(), 0);
  Generator gen = epoch_generator(seed, epoch);
  if (options.shuffle) {
    shuffle(order, gen);
    const std::int64_t chunk = options.batch_size * options.chunk_batches;
    for (std::int64_t begin = 0; begin < n; begin += chunk) {
      auto first = order.begin() + static_cast<std::ptrdiff_t>(begin);
      auto last = order.begin() + static_cast<std::ptrdiff_t>(std::min(n, begin + chunk));
      std::stable_sort(first, last, [&](std::int64_t a, std::int64_t b) {
        const EncodedPair& x = data[static_cast<std::size_t>(a)];
        const EncodedPair& y = data[static_cast<std::size_t>(b)];
        if (x.source.size() != y.source.size()) return x.source.size() < y.source.size();
        return x.target.size() < y.target.size();
      });
    }
  }
  // Batches never straddle two chunks, so the last batch of a chunk may be short.
  std::vector<std::vector<std::int64_t>> batches;
  const std::int64_t chunk = options.shuffle ? options.batch_size * options.chunk_batches : n;
  for (std::int64_t chunk_begin = 0; chunk_begin < n; chunk_begin += chunk) {
    std::int64_t chunk_end = std::min(n, chunk_begin + chunk);
    for (std::int64_t begin = chunk_begin; begin < chunk_end; begin += options.batch_size) {
      std::int64_t end = std::min(chunk_end, begin + options.batch_size);
      batches.emplace_back(order.begin() + static_cast<std::ptrdiff_t>(begin),
                           order.begin() + static_cast<std::ptrdiff_t>(end));
    }
  }
  if (options.shuffle) shuffle(batches, gen);
  return batches;
}

BatchIterator::BatchIterator(const std::vector<EncodedPair>& data, const BatchingOptions& options,
                             std::uint64_t seed, std::int64_t epoch, std::int64_t start_batch,
                             const BatchOptions& batch_options)
    : data_(&data), batch_options_(batch_options), order_(epoch_order(data, options, seed, epoch)),
      position_(start_batch) {
  if (start_batch < 0 || start_batch > size())
    fail("BatchIterator: start_batch {} is out of range for an epoch of {} batches", start_batch, size());
}

Batch BatchIterator::next() {
  if (done()) fail("BatchIterator::next: the epoch's {} batches are done", size());
  return make_batch(*data_, order_[static_cast<std::size_t>(position_++)], batch_options_);
}

const std::vector<std::int64_t>& BatchIterator::next_ids() {
  if (done()) fail("BatchIterator::next_ids: the epoch's {} batches are done", size());
  return order_[static_cast<std::size_t>(position_++)];
}

}  // namespace attend
