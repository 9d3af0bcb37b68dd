#pragma once
// attend serve: the explorer page's files (tools/serve/explorer/), embedded into
// the program at build time (tools/serve/embed_page.cmake writes their bytes
// into a generated source), so that the installed program needs no data files.
#include <span>
#include <string_view>

namespace attend::tools::serve {

struct PageFile {
  std::string_view name;          // "index.html": served at /index.html (and "/" for index.html)
  std::string_view content_type;  // from the extension
  std::string_view bytes;
};

std::span<const PageFile> page_files();

}  // namespace attend::tools::serve
