// attend serve: the models behind an HTTP server on the loopback interface,
// with OpenNMT-py's REST API, POST /explain and the explorer page
// (tools/serve/, docs/serve.md).
#include <cstdio>

#include <limits>

#include <fmt/format.h>

#include "core/kernels/blas.hpp"
#include "core/io/limits.hpp"
#include "tools/cli/checks.hpp"
#include "tools/cli/commands.hpp"
#include "tools/cli/translate.hpp"
#include "tools/serve/server.hpp"
#include "tools/serve/service.hpp"

namespace attend::tools {

namespace {

struct ServeFlags {
  TranslateFlags translate;  // --model (several: several models, not an ensemble) and the decoding defaults
  serve::ServerConfig server;
  bool coalesce = false;
  std::vector<std::int64_t> model_ids;  // --model-id, one for each --model
};

void run_serve(ServeFlags& f) {
  if (f.translate.models.size() > static_cast<std::size_t>(limits::kMaxEnsemble))
    fail("serve: {} models given; at most {} (core/io/limits.hpp)", f.translate.models.size(), limits::kMaxEnsemble);
  blas::set_num_threads(f.translate.threads);
  serve::Service service(f.translate.models, f.translate, f.coalesce, f.model_ids);
  serve::run_server(service, f.server, stdout);
}

}  // namespace

void add_serve_command(CLI::App& app) {
  auto f = std::make_shared<ServeFlags>();
  auto* cmd = app.add_subcommand("serve", "Serve models over HTTP: OpenNMT-py's REST API, POST /explain and the "
                                          "attention explorer page at /");
  cmd->footer(
      "Prints 'listening on http://HOST:PORT/' once ready; open it in a browser for the explorer. The API\n"
      "(POST /translator/translate, GET /translator/models, GET /translator/health, POST /explain), its limits\n"
      "and curl examples: docs/serve.md. SIGINT or SIGTERM stops the server once the requests in flight are\n"
      "answered. It binds 127.0.0.1 by default: it has no authentication.\n"
      "  attend serve --model additive --model dot --port 0");
  cmd->add_option("--model", f->translate.models,
                  "Model directory written by attend train (default: model); given more than once, several models, "
                  "with ids 0, 1, ... in this order (or --model-id's)")
      ->type_name("DIR")
      ->allow_extra_args(false)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  cmd->add_option("--model-id", f->model_ids,
                  "The id of each --model, in the same order, as an OpenNMT-py configuration numbers them (its "
                  "clients send them as \"id\"); default 0, 1, ...")
      ->type_name("ID")
      ->allow_extra_args(false)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll)
      ->check(check::integer(0, std::numeric_limits<std::int64_t>::max()));
  cmd->add_option("--host", f->server.host, "Address to bind; a non-loopback one needs --allow-remote")
      ->capture_default_str();
  cmd->add_flag("--allow-remote", f->server.allow_remote,
                "Allow a --host that is not a loopback address (the server has no authentication: a warning is "
                "printed)");
  cmd->add_option("--port", f->server.port, "Port (0: a free one, printed in the listening line)")
      ->check(check::integer(0, 65535))
      ->capture_default_str();
  cmd->add_option("--workers", f->server.workers, "Threads answering requests (a copy of a model answers one at a time)")
      ->check(check::integer(1, 64))
      ->capture_default_str();
  cmd->add_option("--copies", f->translate.workers,
                  "Copies of each model, so that N requests decode on one model at once (N times its memory; refused "
                  "when that is more than half the machine's); use with --threads 1 and at least N --workers")
      ->check(check::integer(1, 64))
      ->capture_default_str();
  cmd->add_option("--queue", f->server.queue,
                  "Connections waiting for a worker; past them the server stops accepting until one frees")
      ->check(check::integer(1, 4096))
      ->capture_default_str();
  cmd->add_flag("--coalesce", f->coalesce,
                "Translate the requests that wait for a model with the same options together, in batches of up to "
                "--batch sentences (faster under load; the scores' last digits then depend on the batch, as with "
                "translate's --batch)");
  add_decode_flags(cmd, f->translate.decode, true);
  cmd->add_option("--alignments", f->translate.alignments,
                  "hard: answer with \"align\" unless a request says report_align false")
      ->check(CLI::IsMember({"hard"}))
      ->type_name("hard");
  auto* replace = cmd->add_flag("--replace-unk", f->translate.replace_unk,
                                "Replace each <unk> by the source word it attends to most, unless a request says "
                                "replace_unk false");
  cmd->add_option("--unk-dict", f->translate.unk_dict, "With --replace-unk: a word translation table (as translate's)")
      ->type_name("FILE")
      ->needs(replace)
      ->check(CLI::ExistingFile);
  cmd->add_option("--batch", f->translate.batch, "Sentences of one request decoded together")
      ->check(check::integer(1, limits::kMaxBatch, true))
      ->capture_default_str();
  cmd->add_option("--threads", f->translate.threads, "OpenBLAS threads")->check(check::threads());
  cmd->callback([f] { run_serve(*f); });
}

}  // namespace attend::tools
