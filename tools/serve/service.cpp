// attend serve: the endpoints' answers (service.hpp). Each request's options
// become attend translate's flags and are checked as translate checks them;
// every attend::Error a request causes is its 400 answer.
#include "tools/serve/service.hpp"

#include <cmath>

#include <nlohmann/json.hpp>

#include "core/io/limits.hpp"
#include "tools/explain/explain_step.hpp"
#include "tools/serve/coalesce.hpp"
#include "tools/serve/request.hpp"

namespace attend::tools::serve {

namespace {

using Json = nlohmann::ordered_json;

std::string dump(const Json& j) { return j.dump(-1, ' ', false, Json::error_handler_t::replace); }

// The model's defaults with the request's options: translate's flags.
TranslateFlags flags_for(const ServedModel& m, const RequestOptions& o) {
  TranslateFlags f = m.defaults;
  if (o.beam_size) f.decode.beam = *o.beam_size;
  if (o.n_best) f.decode.n_best = *o.n_best;
  if (o.report_align) f.alignments = *o.report_align ? "hard" : "";
  if (o.replace_unk) f.replace_unk = *o.replace_unk;
  if (m.copies.model().config.attention == AttentionKind::None && (!f.alignments.empty() || f.replace_unk))
    throw HttpError(400, fmt::format("model {} has no attention: {} needs it", m.id,
                                     f.replace_unk ? "replace_unk" : "report_align"));
  return f;
}

DecodeOptions decode_options(const TranslateFlags& f) {
  DecodeOptions o = f.decode.options();  // n_best <= beam, coverage needs a beam
  o.scores = true;                       // pred_score
  return o;
}

// The tokens of each sentence, each checked against the decoding memory limit.
std::vector<std::int64_t> checked(ServedModel& m, const std::vector<std::string>& sources, const DecodeOptions& o) {
  const std::vector<Seq2Seq*> ensemble = ensemble_of(m.copies.first());
  std::vector<std::int64_t> tokens;
  for (std::size_t i = 0; i < sources.size(); ++i)
    tokens.push_back(checked_tokens("translate", ensemble, m.copies.model().codecs.source, sources[i],
                                    fmt::format("item {}", i), o));
  return tokens;
}

Json hypothesis_json(const std::string& src, const TextTranslation* t, std::int64_t n_best, bool align) {
  Json h{{"src", src}, {"tgt", t ? t->text : ""}, {"n_best", n_best}, {"pred_score", t ? t->score : 0.0}};
  if (align) h["align"] = Json::array({t ? hard_links(*t) : ""});
  return h;
}

Json hypotheses_json(const std::vector<TextTranslation>& n_best) {
  Json out = Json::array();
  for (const TextTranslation& t : n_best)
    out.push_back({{"tgt", t.text}, {"tokens", t.output_tokens}, {"pred_score", t.score}, {"log_prob", t.log_prob}});
  return out;
}

// ‖h_j‖ of each encoder state (the same for every step): α_tj ‖h_j‖ is the length
// of source token j's share of step t's context, for any cell of the heatmap.
std::vector<double> state_norms(const Json& H) {
  const auto S = H["shape"][0].get<std::size_t>(), Hk = H["shape"][1].get<std::size_t>();
  const std::vector<double> h = H["data"].get<std::vector<double>>();
  std::vector<double> norms(S, 0.0);
  for (std::size_t j = 0; j < S; ++j) {
    for (std::size_t i = 0; i < Hk; ++i) norms[j] += h[j * Hk + i] * h[j * Hk + i];
    norms[j] = std::sqrt(norms[j]);
  }
  return norms;
}

}  // namespace

void Copies::set(std::vector<std::vector<LoadedModel>> copies) {
  copies_ = std::move(copies);
  free_.clear();
  for (std::size_t k = copies_.size(); k-- > 0;) free_.push_back(k);  // copy 0 lent first
}

Copies::Lease Copies::take() {
  std::unique_lock lock(mutex_);
  freed_.wait(lock, [&] { return !free_.empty(); });
  const std::size_t k = free_.back();
  free_.pop_back();
  return Lease(*this, k);
}

void Copies::give_back(std::size_t k) {
  {
    std::lock_guard lock(mutex_);
    free_.push_back(k);
  }
  freed_.notify_one();
}

Service::Service(const std::vector<std::string>& dirs, const TranslateFlags& defaults, bool coalesce,
                 const std::vector<std::int64_t>& ids) {
  if (!ids.empty() && ids.size() != dirs.size())
    fail("serve: {} --model-id given for {} --model; give one for each model, in the same order", ids.size(),
         dirs.size());
  for (std::size_t i = 0; i < ids.size(); ++i)
    for (std::size_t k = 0; k < i; ++k)
      if (ids[k] == ids[i]) fail("serve: --model-id {} is given twice; each model needs an id of its own", ids[i]);
  const UnkDictionary dictionary = defaults.unk_dict.empty() ? UnkDictionary() : UnkDictionary::load(defaults.unk_dict);
  defaults.decode.options();  // the flags' mistakes before any model loads
  for (const std::string& dir : dirs) {
    auto m = std::make_unique<ServedModel>();
    m->id = ids.empty() ? static_cast<std::int64_t>(models_.size()) : ids[models_.size()];
    m->dir = dir;
    m->defaults = defaults;
    m->defaults.models = {dir};
    m->copies.set(load_replicas(m->defaults, load_models(m->defaults), "serve: --copies"));
    m->dictionary = dictionary;
    m->coalesce = coalesce;
    if (m->copies.model().config.attention == AttentionKind::None && (!defaults.alignments.empty() || defaults.replace_unk))
      fail("serve: {} needs models with attention; {} has none",
           defaults.replace_unk ? "--replace-unk" : "--alignments", dir);
    models_.push_back(std::move(m));
  }
}

ServedModel& Service::model(std::int64_t id) {
  for (const std::unique_ptr<ServedModel>& m : models_)
    if (m->id == id) return *m;
  std::string ids;
  for (const std::unique_ptr<ServedModel>& m : models_) ids += fmt::format("{}{}", ids.empty() ? "" : ", ", m->id);
  throw HttpError(404, fmt::format("No such model '{}': the ids are {} (GET /translator/models)", id, ids));
}

std::string Service::translate(std::string_view body) {
  const TranslateRequest r = parse_translate_request(body);
  ServedModel& m = model(r.model);
  const TranslateFlags f = flags_for(m, r.options);
  const DecodeOptions options = decode_options(f);
  const std::vector<std::int64_t> tokens = checked(m, r.sources, options);  // reads the model, changes nothing
  std::vector<std::vector<TextTranslation>> out = translate_for(m, r.sources, tokens, f, options);
  if (f.replace_unk)
    for (auto& n_best : out)
      for (TextTranslation& t : n_best) replace_unknown_words(t, m.dictionary, m.copies.model().codecs.target);
  // OpenNMT-py's shape: one list per rank, each with one answer per item.
  Json answer = Json::array();
  for (std::int64_t k = 0; k < f.decode.n_best; ++k) {
    Json rank = Json::array();
    for (std::size_t i = 0; i < out.size(); ++i) {
      const auto rank_k = static_cast<std::size_t>(k);
      rank.push_back(hypothesis_json(r.sources[i], rank_k < out[i].size() ? &out[i][rank_k] : nullptr,
                                     f.decode.n_best, !f.alignments.empty()));
    }
    answer.push_back(std::move(rank));
  }
  return dump(answer);
}

std::string Service::explain(std::string_view body) {
  const ExplainRequest r = parse_explain_request(body);
  ServedModel& m = model(r.model);
  TranslateFlags f = flags_for(m, r.options);
  f.alignments.clear();
  f.replace_unk = false;
  const DecodeOptions options = decode_options(f);
  Copies::Lease copy = m.copies.take();
  LoadedModel& lm = copy.models().front();
  const std::vector<std::int64_t> tokens = checked(m, {r.src}, options);
  if (tokens.front() == 0) throw HttpError(400, "explain: \"src\" has no tokens: nothing to explain");
  if (r.ref)  // the α and dL/dα matrices, bounded before any work
    check_attention_gradients_memory(tokens.front(), static_cast<std::int64_t>(lm.codecs.target.encode(*r.ref).size()));
  const std::vector<TextTranslation> n_best = translate_lines(copy.models(), {r.src}, tokens, f, options).front();
  Json out;
  out["model"] = m.id;
  out["attention"] = std::string(attention_name(lm.config.attention));
  out["src"] = r.src;
  out["source_tokens"] = n_best.front().source_tokens;
  out["translation"] = n_best.front().text;
  out["target"] = r.ref ? "reference" : "greedy";
  out["hypotheses"] = hypotheses_json(n_best);
  if (lm.config.attention == AttentionKind::None) {
    for (const char* key : {"target_tokens", "alpha", "dalpha", "loss", "step", "state_norms"}) out[key] = nullptr;
    return dump(out);
  }
  // Without a reference the greedy translation is explained, whatever the beam.
  TranslateFlags greedy_flags = f;
  greedy_flags.decode.beam = greedy_flags.decode.n_best = 1;
  greedy_flags.decode.coverage = 0;
  const TextTranslation greedy =
      f.decode.beam == 1 || r.ref  // with a reference, only the source tokens are read from it
          ? n_best.front()
          : translate_lines(copy.models(), {r.src}, tokens, greedy_flags, decode_options(greedy_flags)).front().front();
  const AttentionGradients g = explained_gradients(lm, greedy, r.ref ? &*r.ref : nullptr);
  out["target_tokens"] = g.target_tokens;
  out["alpha"] = g.alpha;
  out["dalpha"] = g.dalpha;
  out["loss"] = g.loss;
  const auto steps = static_cast<std::int64_t>(g.target_tokens.size());
  if (r.step >= steps)
    throw HttpError(400, fmt::format("explain: \"step\" {} is out of range: the target has {} steps (0 to {})", r.step,
                                     steps, steps - 1));
  const std::vector<std::string> target(g.target_tokens.begin(), g.target_tokens.end() - 1);  // without </s>
  out["step"] = explain_model_step(*lm.model, g.source_tokens, target, lm.source_vocab, lm.target_vocab, r.step);
  out["state_norms"] = state_norms(out["step"]["values"]["H"]);
  return dump(out);
}

std::string Service::models() const {
  Json out = Json::array();
  for (const auto& m : models_) {
    const TranslateFlags& f = m->defaults;
    out.push_back({{"model_id", m->id},
                   {"models", {m->dir}},
                   {"loaded", true},
                   {"timeout", -1},
                   {"opt",
                    {{"beam_size", f.decode.beam},
                     {"n_best", f.decode.n_best},
                     {"report_align", !f.alignments.empty()},
                     {"replace_unk", f.replace_unk}}},
                   {"attention", std::string(attention_name(m->copies.model().config.attention))},
                   {"copies", m->copies.size()},
                   {"weights", m->copies.model().int8 ? "int8" : "float32"}});
  }
  return dump(out);
}

}  // namespace attend::tools::serve
