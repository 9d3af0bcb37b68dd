# CTest test tests.scratch_only: the tests make temporary files only through
# tests/support/scratch.hpp, whose directories are removed however a test ends
# (and tests.no_scratch_left finds the programs that write files by its
# include). A test source that names the temporary directory itself, or makes
# temporary files by another way, is reported.
file(GLOB_RECURSE sources "${SOURCE_DIR}/*.cpp" "${SOURCE_DIR}/*.hpp")
set(problems "")
foreach(source IN LISTS sources)
  file(RELATIVE_PATH name "${SOURCE_DIR}" "${source}")
  # The scratch header itself, and the fuzz targets (libFuzzer runs them; their
  # directory is removed at exit, tests/fuzz/targets_common.cpp).
  if(name STREQUAL "support/scratch.hpp" OR name MATCHES "^fuzz/targets_")
    continue()
  endif()
  file(STRINGS "${source}" hits REGEX "temp_directory_path|mkstemp|mkdtemp|tmpnam|getenv\\(\"TMPDIR\"\\)")
  if(hits)
    string(APPEND problems "tests/${name}: ${hits}\n")
  endif()
endforeach()
if(problems)
  message(FATAL_ERROR "temporary files outside tests/support/scratch.hpp (use attend::testing::Scratch):\n${problems}")
endif()
