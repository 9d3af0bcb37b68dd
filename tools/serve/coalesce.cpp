// attend serve --coalesce (coalesce.hpp). A request puts itself on its model's
// waiting list, then waits for a copy of the model. Whoever gets one first takes
// every waiting request with its options (up to --batch sentences), translates
// them in one batch and hands each its answers. A request that another has taken
// into its batch (with --copies, it may get a copy of its own meanwhile) gives
// its copy back and waits for its answers. The list holds pointers to the
// waiting requests' own frames: each stays until its answers are in.
#include "tools/serve/coalesce.hpp"

#include <exception>
#include <vector>

namespace attend::tools::serve {

struct Waiting {
  const std::vector<std::string>* sources;
  const std::vector<std::int64_t>* tokens;
  const TranslateFlags* flags;
  std::vector<std::vector<TextTranslation>> out;
  std::exception_ptr error;
  bool claimed = false;  // taken into a batch: its answers will come
  bool done = false;     // its answers (or error) are in
};

namespace {

bool same_options(const TranslateFlags& a, const TranslateFlags& b) {
  return a.decode.beam == b.decode.beam && a.decode.n_best == b.decode.n_best &&
         a.decode.length_penalty == b.decode.length_penalty && a.decode.alpha == b.decode.alpha &&
         a.decode.coverage == b.decode.coverage && a.batch == b.batch;
}

// Takes `me` and the unclaimed waiting requests with its options, up to f.batch
// sentences, and claims them. The caller holds m.waiting_mutex.
std::vector<Waiting*> take_batch(ServedModel& m, Waiting& me) {
  std::vector<Waiting*> batch{&me}, rest;
  std::size_t sentences = me.sources->size();
  for (Waiting* w : m.waiting) {
    if (w == &me) continue;
    const bool fits = sentences + w->sources->size() <= static_cast<std::size_t>(me.flags->batch);
    if (fits && same_options(*w->flags, *me.flags)) {
      batch.push_back(w);
      sentences += w->sources->size();
    } else {
      rest.push_back(w);
    }
  }
  m.waiting = std::move(rest);
  for (Waiting* w : batch) w->claimed = true;
  return batch;
}

void translate_batch(ServedModel& m, std::vector<LoadedModel>& models, const std::vector<Waiting*>& batch,
                     const DecodeOptions& options) {
  std::vector<std::string> sources;
  std::vector<std::int64_t> tokens;
  for (const Waiting* w : batch) {
    sources.insert(sources.end(), w->sources->begin(), w->sources->end());
    tokens.insert(tokens.end(), w->tokens->begin(), w->tokens->end());
  }
  std::exception_ptr error;
  std::vector<std::vector<TextTranslation>> out;
  try {
    out = translate_lines(models, sources, tokens, *batch.front()->flags, options);
  } catch (...) {
    error = std::current_exception();
  }
  {
    std::lock_guard<std::mutex> lock(m.waiting_mutex);
    std::size_t next = 0;
    for (Waiting* w : batch) {
      w->error = error;
      if (!error)
        for (std::size_t i = 0; i < w->sources->size(); ++i) w->out.push_back(std::move(out[next++]));
      w->done = true;
    }
  }
  m.answered.notify_all();
}

// With a copy of the model: the batch `me` leads, or nothing when another
// request has claimed `me` (then its answers come from that one).
void lead_or_leave(ServedModel& m, Waiting& me, const DecodeOptions& options) {
  Copies::Lease copy = m.copies.take();
  std::vector<Waiting*> batch;
  {
    std::lock_guard<std::mutex> lock(m.waiting_mutex);
    if (!me.claimed) batch = take_batch(m, me);
  }
  if (!batch.empty()) translate_batch(m, copy.models(), batch, options);
}

}  // namespace

std::vector<std::vector<TextTranslation>> translate_for(ServedModel& m, const std::vector<std::string>& sources,
                                                        const std::vector<std::int64_t>& tokens,
                                                        const TranslateFlags& f, const DecodeOptions& options) {
  if (!m.coalesce) {
    Copies::Lease copy = m.copies.take();
    return translate_lines(copy.models(), sources, tokens, f, options);
  }
  Waiting me{&sources, &tokens, &f, {}, nullptr, false, false};
  {
    std::lock_guard<std::mutex> lock(m.waiting_mutex);
    m.waiting.push_back(&me);
  }
  // However this function ends, no pointer to its frame stays on the list.
  struct Leave {
    ServedModel& m;
    Waiting* me;
    ~Leave() {
      std::lock_guard<std::mutex> lock(m.waiting_mutex);
      std::erase(m.waiting, me);
    }
  } leave{m, &me};
  lead_or_leave(m, me, options);
  {
    std::unique_lock<std::mutex> lock(m.waiting_mutex);
    m.answered.wait(lock, [&] { return me.done; });
  }
  if (me.error) std::rethrow_exception(me.error);
  return std::move(me.out);
}

}  // namespace attend::tools::serve
