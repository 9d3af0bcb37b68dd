# Keeps the docs honest: every repository path written in README.md and docs/*.md
# exists. A path is a word that starts at a word boundary with a top-level folder
# (core/, autograd/, layers/, models/, tools/, python/, tests/, bench/, docs/, .ci/), as in
# `core/io/file_io.hpp` or `tools/cli/`, or the target of a relative Markdown link,
# resolved from the page that holds it. Excepted: patterns and placeholders (a word
# with * < > { }, as tests/**/test_*.cpp or cmd_<name>.cpp), and paths inside other
# paths (build/release/tools/attend, /usr/share/locale), which the boundary skips.
# `file.hpp/.cpp` stands for both files.
#   cmake -DSOURCE_DIR=<attend source> -P check_paths.cmake
if(NOT SOURCE_DIR)
  message(FATAL_ERROR "usage: cmake -DSOURCE_DIR=<attend source> -P check_paths.cmake")
endif()

file(GLOB pages RELATIVE "${SOURCE_DIR}" "${SOURCE_DIR}/docs/*.md")
set(pages README.md ${pages})
set(path_chars "A-Za-z0-9_./<>*{}+-")
set(folders "(\\.ci|core|autograd|layers|models|tools|python|tests|bench|docs)")
set(missing "")
set(checked 0)

# Appends "PAGE: PATH" to missing when PATH (relative to SOURCE_DIR) does not exist.
function(check_path page path)
  math(EXPR n "${checked} + 1")
  set(checked ${n} PARENT_SCOPE)
  if(path MATCHES "^(.*)\\.hpp/\\.cpp$")
    set(candidates "${CMAKE_MATCH_1}.hpp" "${CMAKE_MATCH_1}.cpp")
  else()
    set(candidates "${path}")
  endif()
  foreach(candidate ${candidates})
    if(NOT EXISTS "${SOURCE_DIR}/${candidate}")
      list(APPEND missing "${page}: ${candidate}")
    endif()
  endforeach()
  set(missing "${missing}" PARENT_SCOPE)
endfunction()

foreach(page ${pages})
  file(READ "${SOURCE_DIR}/${page}" text)
  # Brackets and semicolons would split or merge CMake list items: a link's "](" becomes
  # a marker, and the rest become spaces.
  string(REPLACE "](" " LINK-TARGET:" text "${text}")
  string(REGEX REPLACE "[][;]" " " text "${text}")
  get_filename_component(page_dir "${page}" DIRECTORY)

  # Paths in the text: a top-level folder right after a character that cannot be
  # part of a path, so that build/release/tools/attend is not read as tools/attend.
  string(REGEX MATCHALL "(^|[^A-Za-z0-9_./~$-])${folders}/[${path_chars}]*" words "${text}")
  foreach(word ${words})
    string(REGEX REPLACE "^[^A-Za-z0-9_.]" "" path "${word}")
    string(REGEX REPLACE "[.,:-]+$" "" path "${path}")
    if(path MATCHES "[*<>{}]")
      continue()
    endif()
    check_path("${page}" "${path}")
  endforeach()

  # Relative Markdown links: [text](target) and ![text](target).
  # The target ends at ")" or "#" (an anchor), which tells it from a C++ lambda's "](".
  string(REGEX MATCHALL "LINK-TARGET:[A-Za-z0-9_./-]+[)#]" links "${text}")
  foreach(link ${links})
    string(REGEX REPLACE "^LINK-TARGET:(.*).$" "\\1" target "${link}")
    if(target MATCHES "^(https?|mailto):" OR target MATCHES "^/" OR target MATCHES "[*<>{}]")
      continue()
    endif()
    if(page_dir)
      set(target "${page_dir}/${target}")
    endif()
    check_path("${page}" "${target}")
  endforeach()
endforeach()

if(missing)
  list(LENGTH missing count)
  string(REPLACE ";" "\n  " listing "${missing}")
  message(FATAL_ERROR "${count} path(s) named in the docs do not exist:\n  ${listing}")
endif()
list(JOIN pages ", " page_list)
message(STATUS "docs.paths_exist: the ${checked} paths named in ${page_list} exist")
