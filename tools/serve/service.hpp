#pragma once
// attend serve: what each endpoint answers (docs/serve.md), apart from HTTP.
// The loaded models, and one function per endpoint: a JSON body in, the JSON
// body of a 200 answer out, or an HttpError (request.hpp) for a bad request.
// Translation and explanation go through attend translate's functions
// (tools/cli/translate.hpp): the server answers what the command prints.
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "models/decode/alignment.hpp"
#include "models/model_dir.hpp"
#include "tools/cli/translate.hpp"

namespace attend::tools::serve {

struct Waiting;  // coalesce.cpp

// The copies of a model (--copies), each decoding one request at a time:
// Seq2Seq::step counts the steps since the last encode, and explaining sets a
// hook on the model and accumulates into its gradients. take() lends a free
// copy, waiting for one if none is.
class Copies {
 public:
  class Lease {
   public:
    Lease(Copies& copies, std::size_t k) : copies_(copies), k_(k) {}
    ~Lease() { copies_.give_back(k_); }
    Lease(const Lease&) = delete;
    Lease& operator=(const Lease&) = delete;
    std::vector<LoadedModel>& models() { return copies_.copies_[k_]; }

   private:
    Copies& copies_;
    std::size_t k_;
  };

  void set(std::vector<std::vector<LoadedModel>> copies);  // before any take()
  Lease take();
  std::size_t size() const { return copies_.size(); }
  // The first copy, for what reads a model without decoding on it (its config,
  // its tokenizers), which any request may do at any time.
  std::vector<LoadedModel>& first() { return copies_.front(); }
  const LoadedModel& model() const { return copies_.front().front(); }

 private:
  void give_back(std::size_t k);
  std::vector<std::vector<LoadedModel>> copies_;  // each one model (translate_lines takes a list: an ensemble)
  std::vector<std::size_t> free_;
  std::mutex mutex_;
  std::condition_variable freed_;
};

// A model: its copies and its default options.
struct ServedModel {
  std::int64_t id = 0;
  std::string dir;
  Copies copies;
  TranslateFlags defaults;          // beam, n-best, alignments ("" or "hard"), replace-unk, length penalty, ...
  UnkDictionary dictionary;
  bool coalesce = false;                // --coalesce (coalesce.hpp)
  std::mutex waiting_mutex;             // guards `waiting` and the answers handed out
  std::condition_variable answered;     // a batch's answers are in
  std::vector<Waiting*> waiting;         // the requests waiting for the model
};

class Service {
 public:
  // Loads each directory once, as model 0, 1, ...; `defaults` holds the options
  // of attend translate that apply (checked here, as translate checks them);
  // defaults.workers copies of each (--copies, as translate's --workers).
  // ids: each model's id, in the order of dirs, as an OpenNMT-py configuration
  // numbers them (its clients send them back); empty: 0, 1, 2, ...
  Service(const std::vector<std::string>& dirs, const TranslateFlags& defaults, bool coalesce = false,
          const std::vector<std::int64_t>& ids = {});

  std::string translate(std::string_view body);  // POST /translator/translate
  std::string explain(std::string_view body);    // POST /explain
  std::string models() const;                    // GET /translator/models

 private:
  ServedModel& model(std::int64_t id);
  std::vector<std::unique_ptr<ServedModel>> models_;
};

}  // namespace attend::tools::serve
