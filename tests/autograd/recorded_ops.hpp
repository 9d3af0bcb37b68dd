#pragma once
// The op names recorded in autograd/ and layers/ (every .cpp below them), read
// from the source: record("name", ...), the names given to the shared helpers
// that record for several ops (join, reduce_all, reduce_axis, binary_op), and
// `const char* op = "name"` in a function that goes on to record(op, ...).
// Held against the `attend gradcheck` cases and docs/derivatives.md.
#include <filesystem>
#include <fstream>
#include <iterator>
#include <regex>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace attend::test {

// The repository's root: ATTEND_TEST_DATA is tests/data.
inline std::filesystem::path source_root() {
  return std::filesystem::path(ATTEND_TEST_DATA).parent_path().parent_path();
}

inline std::string read_text(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

inline std::set<std::string> recorded_op_names() {
  const std::regex literal(R"re((?:record|join|reduce_all|reduce_axis|binary_op)\(\s*"([a-z_0-9]+)")re");
  const std::regex named(R"re(const char\* op = "([a-z_0-9]+)")re");
  std::set<std::string> names;
  for (const char* folder : {"autograd", "layers"})
    for (const auto& entry : std::filesystem::recursive_directory_iterator(source_root() / folder)) {
      if (entry.path().extension() != ".cpp") continue;
      const std::string text = read_text(entry.path());
      for (std::sregex_iterator it(text.begin(), text.end(), literal), end; it != end; ++it) names.insert((*it)[1]);
      std::vector<std::pair<std::size_t, std::string>> ops;  // where each `op` is named, and the name
      for (std::sregex_iterator it(text.begin(), text.end(), named), end; it != end; ++it)
        ops.emplace_back(static_cast<std::size_t>(it->position()), (*it)[1]);
      for (std::size_t k = 0; k < ops.size(); ++k) {
        const std::size_t stop = k + 1 < ops.size() ? ops[k + 1].first : text.size();
        const std::size_t at = text.find("record(op", ops[k].first);
        if (at != std::string::npos && at < stop) names.insert(ops[k].second);
      }
    }
  return names;
}

}  // namespace attend::test
