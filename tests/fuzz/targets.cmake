# Reads tests/fuzz/targets.txt (the one list of fuzz targets) into ATTEND_FUZZ_TARGETS
# (the names) and writes ${CMAKE_CURRENT_BINARY_DIR}/fuzz_targets.inc, the rows of
# attend::fuzz::targets() (tests/fuzz/targets_common.cpp), whose folder it returns
# in ATTEND_FUZZ_INCLUDE_DIR.
set(list_file "${CMAKE_CURRENT_LIST_DIR}/targets.txt")
set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS "${list_file}")
file(STRINGS "${list_file}" lines REGEX "^[a-z_]+ [0-9]+$")
set(ATTEND_FUZZ_TARGETS "")
set(rows "// Generated from tests/fuzz/targets.txt by tests/fuzz/targets.cmake.\n")
foreach(line IN LISTS lines)
  string(REPLACE " " ";" fields "${line}")
  list(GET fields 0 name)
  list(GET fields 1 max_len)
  list(APPEND ATTEND_FUZZ_TARGETS ${name})
  string(APPEND rows "{\"${name}\", fuzz_${name}, ${max_len}},\n")
endforeach()
set(ATTEND_FUZZ_INCLUDE_DIR "${CMAKE_CURRENT_BINARY_DIR}/fuzz_generated")
file(CONFIGURE OUTPUT "${ATTEND_FUZZ_INCLUDE_DIR}/fuzz_targets.inc" CONTENT "${rows}")
