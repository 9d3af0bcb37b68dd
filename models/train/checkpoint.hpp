#pragma once
// A training checkpoint as one atomic unit.
//
//   DIR/checkpoint/last.safetensors       the model after the last completed step
//   DIR/checkpoint/optimizer.safetensors  the optimizer's state
//   DIR/checkpoint/trainer_state.json     epoch, position, generators, history...
//
// The three files only make sense together, so they are never replaced one by
// one. write_checkpoint writes a new generation into a fresh directory beside
// the old one (DIR/checkpoint.tmp-PID-N), fsyncs every file and the directory,
// and then swaps it with DIR/checkpoint in one renameat2(RENAME_EXCHANGE): that
// single rename is the commit point. A kill or a full disk before it leaves the
// previous generation untouched (and a stray temporary that the next run
// removes); after it, the new one is whole. The old generation is deleted last.
//
// Belt and braces: each file also records the global step (safetensors
// metadata "global_step", trainer_state.json "global_step"), and
// read_checkpoint refuses files that disagree, e.g. copied together by hand.
#include <array>
#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "autograd/optim/optim.hpp"
#include "layers/module.hpp"

namespace attend {

// The checkpoint directory inside a model directory: DIR/checkpoint.
std::string checkpoint_dir(const std::string& model_dir);
// Whether model_dir holds a committed checkpoint.
bool has_checkpoint(const std::string& model_dir);
// Throws attend::Error saying why model_dir has no checkpoint to resume, if it has none.
void require_checkpoint(const std::string& model_dir);

// Commits model, optimizer and state (which must hold "global_step") as the
// checkpoint of model_dir, atomically (see above). Throws attend::Error on any
// failure, leaving the previous checkpoint as it was.
void write_checkpoint(const std::string& model_dir, const nn::Module& model, const optim::Optimizer& optimizer,
                      const nlohmann::json& state);

// Loads the checkpoint of model_dir into model and optimizer and returns the
// trainer state, after checking that the three files carry the same global step.
nlohmann::json read_checkpoint(const std::string& model_dir, nn::Module& model, optim::Optimizer& optimizer);

}  // namespace attend

namespace attend {

// The name of the first parameter of model holding a NaN or infinity, or "" if
// all are finite. A non-finite weight is never saved.
std::string first_non_finite_parameter(const nn::Module& model);

// Checked readers of trainer_state.json: each error names the file and the key.
std::int64_t state_count(const nlohmann::json& state, const char* key, const std::string& path);  // integer >= 0
double state_number(const nlohmann::json& state, const char* key, const std::string& path);       // finite, or null as NaN
std::array<std::uint64_t, 4> state_generator(const nlohmann::json& state, const char* key, const std::string& path);

}  // namespace attend
