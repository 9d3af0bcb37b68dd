// models/quantize/quantize_dir (attend quantize): the int8 model directory, what
// reads it (translate, NumPy), and what keeps int8 and float32 models apart
// (ensembles, averaging, an existing output).
#include <doctest/doctest.h>

#include <cstdlib>
#include <filesystem>

#include <nlohmann/json.hpp>

#include "core/io/file_io.hpp"
#include "layers/serialize.hpp"
#include "models/model_dir.hpp"
#include "models/quantize/quantize.hpp"
#include "models/quantize/quantize_dir.hpp"
#include "models/train/average.hpp"
#include "tests/support/translate_cli.hpp"

using namespace attend;
using attend::testing::run_translate;
using attend::testing::write_model;

namespace {

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

}  // namespace

TEST_CASE("attend quantize writes an int8 model directory that loads and translates") {
  attend::testing::Scratch tmp("attend-test-quantize-dir");
  const std::string in = (tmp.dir / "float").string(), out = (tmp.dir / "int8").string();
  write_model(in, AttentionKind::Additive);
  const QuantizeReport r = quantize_model_dir(in, out, false);
  // encoder W_ih and W_hh in 2 directions, 2 bridges, cell W_ih and W_hh, W_k, W_q, W_c, W_out
  CHECK(r.matrices == 12);
  Generator init(0);
  CHECK(r.quantized + r.kept == Seq2Seq(load_model_dir(in).config, init).num_parameters());
  // 3 bytes saved a weight, less a 4-byte scale a row of at least 8
  CHECK(r.bytes_out + 2 * static_cast<std::uint64_t>(r.quantized) < r.bytes_in);
  CHECK_FALSE(r.replaced);
  const nlohmann::json info = nlohmann::json::parse(read_file(out + "/config.json"));
  CHECK(info.at("weights") == "int8");
  CHECK(info.at("quantized_from") == in);
  const LoadedModel m = load_model_dir(out);
  CHECK(m.int8);
  REQUIRE(m.model->int8() != nullptr);
  CHECK(m.model->int8()->rows.size() == 12);
  const std::string input = "le chat mange\nun chien\n";
  const std::vector<std::string> lines = attend::testing::lines_of(run_translate({"--model", out}, &input));
  CHECK(lines.size() == 2);

  // The int8 model is the float model's weights, quantized: its dequantized
  // parameters lie within half a step of the float ones.
  const LoadedModel f = load_model_dir(in);
  for (const auto& [name, q] : m.model->int8()->rows) {
    const std::vector<double> a = f.model->state_dict().at(name).to_vector(), b = m.model->state_dict().at(name).to_vector();
    for (std::size_t i = 0; i < a.size(); ++i)
      REQUIRE(std::abs(a[i] - b[i]) <= 0.5 * q.scales[i / static_cast<std::size_t>(q.k)] + 1e-7);
  }
}

TEST_CASE("attend quantize refuses an existing output, an int8 input and the input itself") {
  attend::testing::Scratch tmp("attend-test-quantize-dir");
  const std::string in = (tmp.dir / "float").string(), out = (tmp.dir / "int8").string();
  write_model(in, AttentionKind::Dot);
  quantize_model_dir(in, out, false);
  const std::string before = read_file(out + "/model.safetensors");
  CHECK(error_of([&] { quantize_model_dir(in, out, false); }).find("the directory exists") != std::string::npos);
  CHECK(read_file(out + "/model.safetensors") == before);  // untouched
  CHECK(quantize_model_dir(in, out, true).replaced);
  CHECK(error_of([&] { quantize_model_dir(out, (tmp.dir / "again").string(), false); }) ==
        "attend quantize: " + out + " is an int8 model already");
  CHECK(error_of([&] { quantize_model_dir(in, in, true); }) ==
        "attend quantize: " + in + " is the input itself; name a new directory for the int8 model");
  CHECK(std::filesystem::exists(in + "/model.safetensors"));
  CHECK(!std::filesystem::exists(tmp.dir / "again"));
}

TEST_CASE("int8 models ensemble and average only with int8 models") {
  attend::testing::Scratch tmp("attend-test-quantize-dir");
  const std::string a = (tmp.dir / "a").string(), b = (tmp.dir / "b").string();
  const std::string qa = (tmp.dir / "qa").string(), qb = (tmp.dir / "qb").string();
  write_model(a, AttentionKind::Additive, 7);
  write_model(b, AttentionKind::Additive, 8);
  quantize_model_dir(a, qa, false);
  quantize_model_dir(b, qb, false);
  const std::string input = "le chat\n";
  CHECK(error_of([&] { run_translate({"--model", a, "--model", qb}, &input); }).find("its weights are int8, ") !=
        std::string::npos);
  CHECK(attend::testing::lines_of(run_translate({"--model", qa, "--model", qb}, &input)).size() == 1);

  CHECK(error_of([&] { average_model_dirs({a, qb}, (tmp.dir / "mixed").string()); })
            .find("its weights are int8, the first input's are float32") != std::string::npos);
  CHECK(!std::filesystem::exists(tmp.dir / "mixed"));
  // Two int8 models: the mean of their dequantized weights, quantized again.
  average_model_dirs({qa, qb}, (tmp.dir / "mean").string());
  const LoadedModel mean = load_model_dir((tmp.dir / "mean").string());
  const LoadedModel ma = load_model_dir(qa), mb = load_model_dir(qb);
  CHECK(mean.int8);
  const std::string name = "project.weight";
  const std::vector<double> x = ma.model->state_dict().at(name).to_vector(), y = mb.model->state_dict().at(name).to_vector(),
                            z = mean.model->state_dict().at(name).to_vector();
  const blas::QuantizedRows& q = mean.model->int8()->rows.at(name);
  for (std::size_t i = 0; i < z.size(); ++i)
    REQUIRE(std::abs(z[i] - 0.5 * (x[i] + y[i])) <= 0.5 * q.scales[i / static_cast<std::size_t>(q.k)] + 1e-6);
}

TEST_CASE("NumPy (and torch, where installed) read an int8 weights file as attend's dequantized weights") {
  if (std::system("/usr/bin/python3 -c 'import numpy' >/dev/null 2>&1") != 0) {
    MESSAGE("skipped: /usr/bin/python3 with numpy is missing (apt-get install python3-numpy)");
    return;
  }
  attend::testing::Scratch tmp("attend-test-quantize-dir");
  const std::string in = (tmp.dir / "float").string(), out = (tmp.dir / "int8").string();
  write_model(in, AttentionKind::General);
  quantize_model_dir(in, out, false);
  const LoadedModel m = load_model_dir(out);
  const std::string plain = (tmp.dir / "dequantized.safetensors").string();
  nn::save(*m.model, plain);  // every parameter as F32: the int8 ones dequantized
  const std::string script = std::string(ATTEND_TEST_DATA) + "/../reference/int8_numpy.py";
  const std::string command = "/usr/bin/python3 " + script + " " + out + "/model.safetensors " + plain;
  CHECK(std::system(command.c_str()) == 0);
}
