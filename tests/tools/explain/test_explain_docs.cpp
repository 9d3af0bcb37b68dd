// The learner's docs held to the code. Every file a learner doc (and the
// README) names exists, every function it names in that file ("`path: name`",
// or "`path`: `name`, `name`") occurs there, and a bare `Class::member` occurs
// somewhere in the source tree. The worked example of
// docs/backprop-through-attention.md (section 8) is what
// `attend explain --seed 1` prints, the values its "Reading the numbers" quotes
// are the printed ones (sign and last digit; what it works out is recomputed), and docs/figures/step_graph.svg (in the
// README) is what `attend explain --seed 1 --graph` draws. Builds differ in the last bits (-O3 or -Og,
// FMA contraction or not), which moves the |Δ| column and a finite difference's
// last digit; so words are compared exactly and numbers to a tolerance that
// those differences stay far inside, and that any real change (a new number, a
// drifted digit of a value or gradient) exceeds.
#include <doctest/doctest.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <filesystem>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "core/io/file_io.hpp"
#include "tools/explain/explain.hpp"

namespace {

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

// The first code block after `heading`.
std::string block_after(const std::string& doc, const std::string& heading) {
  const std::size_t at = doc.find(heading);
  REQUIRE_MESSAGE(at != std::string::npos, heading);
  const std::size_t open = doc.find("```\n", at);
  REQUIRE(open != std::string::npos);
  const std::size_t close = doc.find("\n```", open + 4);
  REQUIRE(close != std::string::npos);
  return doc.substr(open + 4, close - open - 3);
}

bool as_number(const std::string& word, double& x) {
  std::size_t used = 0;
  try {
    x = std::stod(word, &used);
  } catch (...) {
    return false;
  }
  return used == word.size();
}

// One unit in the last printed digit of a number: "+1.96032717e-01" -> 1e-9.
double last_digit(const std::string& word) {
  const std::size_t dot = word.find('.'), e = word.find_first_of("eE");
  if (dot == std::string::npos) return 0;  // an integer: exact
  if (e == std::string::npos) return std::pow(10.0, -static_cast<int>(word.size() - dot - 1));  // "+0.1235" -> 1e-4
  if (e < dot) return 0;
  return std::pow(10.0, std::stoi(word.substr(e + 1)) - static_cast<int>(e - dot - 1));
}

// Equal up to one unit in the last printed digit of a value (a build may round the
// other way), and up to 1e-10 for the tiny numbers (|Δ|, max |Δ|, the last digits
// of a finite difference) that depend on rounding.
bool within(const std::string& doc_word, double x, const std::string& program_word, double y) {
  return std::abs(x - y) <= 1e-10 + std::max(last_digit(doc_word), last_digit(program_word));
}

void check_same_line(const std::string& doc_line, const std::string& program_line) {
  std::istringstream a(doc_line), b(program_line);
  std::vector<std::string> wa, wb;
  for (std::string w; a >> w;) wa.push_back(w);
  for (std::string w; b >> w;) wb.push_back(w);
  REQUIRE(wa.size() == wb.size());
  for (std::size_t k = 0; k < wa.size(); ++k) {
    double x = 0, y = 0;
    const bool nx = as_number(wa[k], x), ny = as_number(wb[k], y);
    CHECK(nx == ny);
    if (nx && ny) CHECK_MESSAGE(within(wa[k], x, wb[k], y), wa[k], " vs ", wb[k]);
    else CHECK(wa[k] == wb[k]);
  }
}


// ---- The files and functions a doc names ----------------------------------------

// A file and a function in it ("" for a file alone), as a doc names them; a
// bare `Class::member` has no file: the source tree is searched for it.
struct Reference {
  std::string file, function;
};

bool is_path(const std::string& word) {
  static const char* const roots[] = {"core/", "autograd/", "layers/", "models/", "tools/", "tests/", "bench/", "docs/"};
  static const char* const exts[] = {".cpp", ".hpp", ".md", ".py", ".sh", ".cmake", ".svg", ".txt"};
  bool rooted = false, typed = false;
  for (const char* r : roots) rooted = rooted || word.rfind(r, 0) == 0;
  for (const char* e : exts) {
    const std::string ext(e);
    typed = typed || (word.size() > ext.size() && word.compare(word.size() - ext.size(), ext.size(), ext) == 0);
  }
  return rooted && typed && word.find(' ') == std::string::npos;
}

bool is_identifier(const std::string& word) {
  if (word.empty()) return false;
  for (char c : word)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == ':')) return false;
  return !std::isdigit(static_cast<unsigned char>(word[0]));
}

// `AdditiveAttention::precompute`: a capitalised class and its member, with no
// file named (not std::exp, attend::CustomOp or a CMake target, attend::core).
bool is_member(const std::string& word) {
  static const std::regex member("[A-Z][A-Za-z0-9_]*(::[A-Za-z_][A-Za-z0-9_]*)+");
  return std::regex_match(word, member);
}

// Every `...` span of the text, line breaks inside turned into spaces.
std::vector<std::pair<std::size_t, std::string>> code_spans(const std::string& text) {
  std::vector<std::pair<std::size_t, std::string>> spans;
  std::size_t at = 0;
  while ((at = text.find('`', at)) != std::string::npos) {
    if (text.compare(at, 3, "```") == 0) {  // a code block: skip it whole
      const std::size_t end = text.find("```", at + 3);
      if (end == std::string::npos) break;
      at = end + 3;
      continue;
    }
    const std::size_t end = text.find('`', at + 1);
    if (end == std::string::npos) break;
    std::string span = text.substr(at + 1, end - at - 1);
    std::replace(span.begin(), span.end(), '\n', ' ');
    spans.emplace_back(end + 1, span);  // where the text after the span starts
    at = end + 1;
  }
  return spans;
}

std::vector<Reference> references(const std::string& text) {
  std::vector<Reference> out;
  const auto spans = code_spans(text);
  for (std::size_t k = 0; k < spans.size(); ++k) {
    const std::string& span = spans[k].second;
    const std::size_t colon = span.find(": ");
    if (colon != std::string::npos && is_path(span.substr(0, colon))) {  // `path: name`
      std::string name = span.substr(colon + 2);
      name.erase(0, name.find_first_not_of(' '));
      out.push_back({span.substr(0, colon), is_identifier(name) ? name : ""});
      continue;
    }
    if (is_member(span)) {  // bare, not after a `path`: (those are taken below)
      out.push_back({"", span});
      continue;
    }
    if (!is_path(span)) continue;
    out.push_back({span, ""});
    // `path`: `name`, `name` and `name`
    std::size_t after = spans[k].first;
    if (after >= text.size() || text[after] != ':') continue;
    for (std::size_t m = k + 1; m < spans.size(); ++m) {
      const std::size_t open = text.rfind('`', spans[m].first - spans[m].second.size() - 2);
      std::string between = text.substr(after, open - after);
      for (const char* sep : {":", ",", ";", " and ", "\n"})
        for (std::size_t p; (p = between.find(sep)) != std::string::npos;) between.erase(p, std::string(sep).size());
      if (between.find_first_not_of(' ') != std::string::npos || !is_identifier(spans[m].second)) break;
      out.push_back({span, spans[m].second});
      after = spans[m].first;
      k = m;  // taken with its file
    }
  }
  return out;
}

std::string check_reference(const std::filesystem::path& root, const Reference& r);

// A bare `Class::member`: "" when some source file of the library or the tools
// declares the class (or defines Class::member) and names the member as a function.
std::string find_member(const std::filesystem::path& root, const std::string& member) {
  const std::string name = member.substr(member.rfind("::") + 2);
  for (const char* folder : {"core", "autograd", "layers", "models", "tools"})
    for (const auto& entry : std::filesystem::recursive_directory_iterator(root / folder)) {
      const std::string ext = entry.path().extension().string();
      if (!entry.is_regular_file() || (ext != ".cpp" && ext != ".hpp")) continue;
      if (attend::read_file(entry.path().string()).find(name) == std::string::npos) continue;  // the cheap test first
      const std::string file = std::filesystem::relative(entry.path(), root).string();
      if (check_reference(root, {file, member}).empty()) return "";
    }
  return "no file under core/, autograd/, layers/, models/ or tools/ has " + member;
}

// "" when the reference holds; otherwise what is wrong.
std::string check_reference(const std::filesystem::path& root, const Reference& r) {
  if (r.file.empty()) return find_member(root, r.function);
  const std::filesystem::path file = root / r.file;
  if (!std::filesystem::exists(file)) return r.file + " does not exist";
  if (r.function.empty() || std::filesystem::is_directory(file)) return "";
  const std::string code = attend::read_file(file.string());
  std::string name = r.function;
  std::string owner;
  if (const std::size_t scope = name.rfind("::"); scope != std::string::npos) {
    owner = name.substr(0, scope);
    name = name.substr(scope + 2);
  }
  // A function is called or defined (name followed by "(", "<" or "{"); a type
  // is declared; a member's class is named with it or declared in the file.
  const auto named = [&code](const std::string& word) {
    return std::regex_search(code, std::regex("(^|[^A-Za-z0-9_])" + word + "\\s*[(<{]")) ||
           std::regex_search(code, std::regex("(class|struct)\\s+" + word + "\\b"));
  };
  const bool member_ok = owner.empty() || code.find(owner + "::" + name) != std::string::npos ||
                         std::regex_search(code, std::regex("(class|struct)\\s+" + owner + "\\b"));
  // A member may be data too: `std::function<...> on_weights_grad;`.
  const bool data_member = !owner.empty() && std::regex_search(code, std::regex("[A-Za-z0-9_>]\\s+" + name + "\\s*;"));
  if (!(named(name) || data_member) || !member_ok) return r.file + " has no " + r.function;
  return "";
}

}  // namespace

TEST_CASE("every file and function the learner's docs name exists") {
  const std::filesystem::path root = ATTEND_TEST_DATA "/../..";
  int checked = 0, functions = 0;
  for (const char* doc : {"README.md", "docs/start-here.md", "docs/backprop-through-attention.md",
                          "docs/exercises.md", "docs/custom-ops.md", "tests/exercises/exercises.hpp"}) {
    const std::string text = attend::read_file((root / doc).string());
    for (const Reference& r : references(text)) {
      CAPTURE(std::string(doc));
      const std::string wrong = check_reference(root, r);
      CHECK_MESSAGE(wrong.empty(), wrong);
      ++checked;
      if (!r.function.empty()) ++functions;
    }
  }
  // The parser finds what the docs name: far more than a handful of each.
  CHECK(checked > 80);
  CHECK(functions > 40);
}

TEST_CASE("the reference check finds a missing file and a missing function") {
  const std::filesystem::path root = ATTEND_TEST_DATA "/../..";
  const std::string text =
      "See `autograd/ops/softmax.cpp: softmax_row_backward` and `layers/lstm/lstm_cell.cpp`: `lstm_cell_composed`, "
      "`no_such_function`; `autograd/ops/no_such_file.cpp` and `autograd/engine.cpp: Engine::no_such_member`, "
      "`autograd/engine.cpp: Engine::run`, `autograd/engine.cpp: Engine::walk`.";
  const std::vector<Reference> refs = references(text);
  REQUIRE(refs.size() == 8);
  CHECK(check_reference(root, refs[0]).empty());
  CHECK(refs[1].function.empty());
  CHECK(check_reference(root, refs[2]).empty());
  CHECK(refs[3].function == "no_such_function");
  CHECK(check_reference(root, refs[3]) == "layers/lstm/lstm_cell.cpp has no no_such_function");
  CHECK(check_reference(root, refs[4]) == "autograd/ops/no_such_file.cpp does not exist");
  CHECK(check_reference(root, refs[5]) == "autograd/engine.cpp has no Engine::no_such_member");
  CHECK(check_reference(root, refs[6]).empty());
  // "walk" is a word of engine.cpp's comments, but no function there.
  CHECK(check_reference(root, refs[7]) == "autograd/engine.cpp has no Engine::walk");
}

TEST_CASE("a bare Class::member is found in the source tree, or reported") {
  const std::filesystem::path root = ATTEND_TEST_DATA "/../..";
  const std::string text =
      "`AdditiveAttention::precompute` and `Seq2Seq::step`, then `AdditiveAttention::no_such_member`; "
      "`std::exp` and `attend::core` are no class members; `autograd/engine.cpp`: "
      "`Engine::run` is taken with its file.";
  const std::vector<Reference> refs = references(text);
  REQUIRE(refs.size() == 5);
  CHECK(refs[0].file.empty());
  CHECK(check_reference(root, refs[0]).empty());
  CHECK(check_reference(root, refs[1]).empty());
  CHECK(check_reference(root, refs[2]) ==
        "no file under core/, autograd/, layers/, models/ or tools/ has AdditiveAttention::no_such_member");
  CHECK(refs[3].file == "autograd/engine.cpp");
  CHECK(refs[3].function.empty());
  CHECK(refs[4].file == "autograd/engine.cpp");
  CHECK(refs[4].function == "Engine::run");
}

TEST_CASE("docs/backprop-through-attention.md's worked example is what attend explain --seed 1 prints") {
  const std::string doc = attend::read_file(ATTEND_TEST_DATA "/../../docs/backprop-through-attention.md");
  const std::vector<std::string> expected = lines_of(block_after(doc, "## 8. Worked example: `attend explain --seed 1`"));
  const std::vector<std::string> actual = lines_of(attend::tools::explain_attention({"additive", 1, false}).text);
  CHECK(expected.size() == actual.size());
  for (std::size_t i = 0; i < std::min(expected.size(), actual.size()); ++i) {
    CAPTURE(i);
    CAPTURE(expected[i]);
    CAPTURE(actual[i]);
    check_same_line(expected[i], actual[i]);
  }
}

// A number of a text with at least `digits` digits after the point, signed: "−0.18"
// and "(−0.18)" are negative, and so is the term "a − 0.18", whose operator is the
// sign of the value it quotes (a sum of printed terms), as "+ 0.02" is positive.
struct Signed {
  std::string word;  // as written, sign and all: "-0.18300570"
  double value;
};
std::vector<Signed> signed_decimals(std::string text, std::size_t digits) {
  for (std::size_t at; (at = text.find("\u2212")) != std::string::npos;) text.replace(at, 3, "-");
  std::vector<Signed> out;
  const std::regex number("(([-+]) ?)?([0-9]+\\.([0-9]+)(e[-+][0-9]+)?)");
  for (auto it = std::sregex_iterator(text.begin(), text.end(), number); it != std::sregex_iterator(); ++it) {
    const std::smatch& m = *it;
    if (m[5].length() == 0 && static_cast<std::size_t>(m[4].length()) < digits) continue;
    const std::string word = (m[2] == "-" ? "-" : "") + m[3].str();
    out.push_back({word, std::stod(word)});
  }
  return out;
}

// The values "Reading the numbers" works out from printed ones (products,
// sums, 1 − h~²), recomputed here from the printed values it quotes. A quote
// of a printed value needs no entry: it must equal one, sign and last digit.
struct Derived {
  const char* what;
  double value;
};
std::vector<Derived> derived_values() {
  const double h_tilde[4] = {+2.32816296e-01, -2.82679602e-01, +5.05753003e-01, +1.36089210e-01};  // printed h~
  const double dh_tilde[4] = {-0.36923172, -0.39662344, -0.33991455, +0.00500775};
  const double W_c5[4] = {+0.11288435, +0.34257645, +0.06749815, -0.16070109};
  std::vector<Derived> d = {
      {"∂L/∂c_1 h_3[1]", -0.18230253 * +0.96163483},
      {"∂L/∂c_2 h_3[2]", +0.04145742 * -0.47199912},
      {"∂L/∂c_3 h_3[3]", -0.01831715 * +0.68130768},
      {"∂L/∂c_4 h_3[4]", -0.03509972 * -0.69374456},
      {"∂L/∂α_1 − Σ_k α_k ∂L/∂α_k", 0.02447887 - -0.05050657},
      {"α_1 ∂L/∂c_1", 0.32654598 * -0.18230253},
      {"the key path of ∂L/∂h_1[1]", -0.06560950 - 0.32654598 * -0.18230253},
  };
  for (int m = 0; m < 4; ++m) {
    d.push_back({"1 − h~_m²", 1 - h_tilde[m] * h_tilde[m]});
    d.push_back({"W_c[m,5] (1 − h~_m²) ∂L/∂h~_m", W_c5[m] * (1 - h_tilde[m] * h_tilde[m]) * dh_tilde[m]});
  }
  return d;
}

TEST_CASE("the numbers 'Reading the numbers' quotes are attend explain --seed 1's, sign and last digit") {
  const std::string doc = attend::read_file(ATTEND_TEST_DATA "/../../docs/backprop-through-attention.md");
  const std::size_t from = doc.find("### Reading the numbers"), to = doc.find("Run it yourself", from);
  REQUIRE(from != std::string::npos);
  REQUIRE(to != std::string::npos);
  const std::vector<Signed> printed = signed_decimals(attend::tools::explain_attention({"additive", 1, false}).text, 0);
  const std::vector<Derived> derived = derived_values();
  std::vector<int> used(derived.size(), 0);
  int quoted = 0;
  for (const Signed& x : signed_decimals(doc.substr(from, to - from), 5)) {
    CAPTURE(x.word);
    const double unit = last_digit(x.word) + 1e-10;
    bool exact = false, flipped = false, near = false;
    for (const Signed& p : printed) {
      exact = exact || std::abs(x.value - p.value) <= unit;
      flipped = flipped || (std::abs(x.value + p.value) <= unit && p.value != 0);
      near = near || std::abs(x.value - p.value) <= 1e-3 * std::max(std::abs(x.value), 1e-3);
    }
    if (exact) {
      ++quoted;
      continue;
    }
    bool worked_out = false;
    for (std::size_t k = 0; k < derived.size(); ++k)
      if (std::abs(x.value - derived[k].value) <= unit) worked_out = true, ++used[k];
    if (worked_out) continue;
    CHECK_MESSAGE(!flipped, "the sign of a printed value is wrong");
    CHECK_MESSAGE(!near, "a printed value quoted with a wrong digit");
    FAIL_CHECK("neither a printed value nor one derived_values() works out");
  }
  for (std::size_t k = 0; k < derived.size(); ++k) {
    CAPTURE(std::string(derived[k].what));
    CHECK_MESSAGE(used[k] > 0, "derived_values() lists a value the section no longer has");
  }
  // Most of the section quotes printed values; a new seed or model would leave few.
  CHECK(quoted >= 35);
}

TEST_CASE("docs/figures/step_graph.svg is what attend explain --seed 1 --graph draws") {
  const std::string figure = attend::read_file(ATTEND_TEST_DATA "/../../docs/figures/step_graph.svg");
  const std::vector<std::string> expected = lines_of(figure);
  const std::vector<std::string> actual = lines_of(attend::tools::explain_attention({"additive", 1, false}).graph);
  CHECK(expected.size() == actual.size());
  for (std::size_t i = 0; i < std::min(expected.size(), actual.size()); ++i) {
    CAPTURE(i);
    check_same_line(expected[i], actual[i]);
  }
}

TEST_CASE("the comparison catches a drifted digit and lets rounding noise pass") {
  // The test above must be able to fail: two units in the last digit of a value are a drift.
  CHECK(last_digit("+1.96032717e-01") == doctest::Approx(1e-9));
  CHECK(last_digit("7.1e-12") == doctest::Approx(1e-13));
  CHECK(last_digit("79") == 0);
  CHECK(last_digit("+0.1235") == doctest::Approx(1e-4));
  CHECK(within("+1.96032717e-01", 1.96032717e-01, "+1.96032718e-01", 1.96032718e-01));
  CHECK_FALSE(within("+1.96032717e-01", 1.96032717e-01, "+1.96032719e-01", 1.96032719e-01));
  CHECK_FALSE(within("-8.84993924e-01", -8.84993924e-01, "+8.84993924e-01", 8.84993924e-01));
  CHECK_FALSE(within("79", 79, "80", 80));
  CHECK(within("7.1e-12", 7.1e-12, "3.5e-11", 3.5e-11));  // a rounding-level |Δ| may move
  double x = 0;
  CHECK_FALSE(as_number("∂L/∂z_0", x));
  CHECK(as_number("+4.49373649e-05", x));
}
