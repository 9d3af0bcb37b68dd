// attend serve --coalesce (coalesce.hpp). A request puts itself on its model's
// waiting list, then takes the model's mutex. Whoever gets it first takes every
// waiting request with its options (up to --batch sentences), translates them in
// one batch and hands each its answers; a request that finds its answers there
// when its turn comes returns them. The list holds pointers to the waiting
// requests' own frames: each stays blocked on the mutex until its answers are in.
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
  bool done = false;
};

namespace {

bool same_options(const TranslateFlags& a, const TranslateFlags& b) {
  return a.decode.beam == b.decode.beam && a.decode.n_best == b.decode.n_best &&
         a.decode.length_penalty == b.decode.length_penalty && a.decode.alpha == b.decode.alpha &&
         a.decode.coverage == b.decode.coverage && a.batch == b.batch;
}

// Takes `me` and the waiting requests with its options, up to f.batch sentences.
std::vector<Waiting*> take_batch(ServedModel& m, Waiting& me) {
  std::lock_guard<std::mutex> lock(m.waiting_mutex);
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
  return batch;
}

void translate_batch(ServedModel& m, const std::vector<Waiting*>& batch, const DecodeOptions& options) {
  std::vector<std::string> sources;
  std::vector<std::int64_t> tokens;
  for (const Waiting* w : batch) {
    sources.insert(sources.end(), w->sources->begin(), w->sources->end());
    tokens.insert(tokens.end(), w->tokens->begin(), w->tokens->end());
  }
  std::exception_ptr error;
  std::vector<std::vector<TextTranslation>> out;
  try {
    out = translate_lines(m.models, sources, tokens, *batch.front()->flags, options);
  } catch (...) {
    error = std::current_exception();
  }
  std::lock_guard<std::mutex> lock(m.waiting_mutex);
  std::size_t next = 0;
  for (Waiting* w : batch) {
    w->error = error;
    if (!error)
      for (std::size_t i = 0; i < w->sources->size(); ++i) w->out.push_back(std::move(out[next++]));
    w->done = true;
  }
}

}  // namespace

std::vector<std::vector<TextTranslation>> translate_for(ServedModel& m, const std::vector<std::string>& sources,
                                                        const std::vector<std::int64_t>& tokens,
                                                        const TranslateFlags& f, const DecodeOptions& options) {
  if (!m.coalesce) {
    std::lock_guard<std::mutex> lock(m.mutex);
    return translate_lines(m.models, sources, tokens, f, options);
  }
  Waiting me{&sources, &tokens, &f, {}, nullptr, false};
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
  std::lock_guard<std::mutex> model_lock(m.mutex);
  bool done = false;
  {
    std::lock_guard<std::mutex> lock(m.waiting_mutex);
    done = me.done;
  }
  if (!done) translate_batch(m, take_batch(m, me), options);
  if (me.error) std::rethrow_exception(me.error);
  return std::move(me.out);
}

}  // namespace attend::tools::serve
