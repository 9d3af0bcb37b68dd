#pragma once
// attend serve: what each endpoint answers (docs/serve.md), apart from HTTP.
// The loaded models, and one function per endpoint: a JSON body in, the JSON
// body of a 200 answer out, or an HttpError (request.hpp) for a bad request.
// Translation and explanation go through attend translate's functions
// (tools/cli/translate.hpp): the server answers what the command prints.
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

// A model and its default options. Its mutex lets one request at a time use it:
// Seq2Seq::step counts the steps since the last encode, and explaining sets a
// hook on the model and accumulates into its gradients.
struct ServedModel {
  std::int64_t id = 0;
  std::string dir;
  std::vector<LoadedModel> models;  // one (translate_lines takes a list: an ensemble)
  TranslateFlags defaults;          // beam, n-best, alignments ("" or "hard"), replace-unk, length penalty, ...
  UnkDictionary dictionary;
  std::mutex mutex;
  bool coalesce = false;                // --coalesce (coalesce.hpp)
  std::mutex waiting_mutex;             // guards `waiting` and the answers handed out
  std::vector<Waiting*> waiting;         // the requests waiting for the model
};

class Service {
 public:
  // Loads each directory once, as model 0, 1, ...; `defaults` holds the options
  // of attend translate that apply (checked here, as translate checks them).
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
