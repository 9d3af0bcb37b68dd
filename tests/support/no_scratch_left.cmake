# CTest test tests.no_scratch_left: runs each test program of NAMES (comma-separated,
# in PROGRAM_DIR) with TMPDIR set to an empty directory of its own, and fails if
# a program fails or leaves anything there (every test's files belong in a
# tests/support/scratch.hpp directory, removed when the test ends).
string(REPLACE "," ";" names "${NAMES}")
set(problems "")
foreach(name IN LISTS names)
  set(tmp "${WORK_DIR}/${name}")
  file(REMOVE_RECURSE "${tmp}")
  file(MAKE_DIRECTORY "${tmp}")
  execute_process(COMMAND ${CMAKE_COMMAND} -E env "TMPDIR=${tmp}" "${PROGRAM_DIR}/${name}"
                  RESULT_VARIABLE status OUTPUT_VARIABLE output ERROR_VARIABLE output)
  file(GLOB left RELATIVE "${tmp}" "${tmp}/*")
  if(NOT status EQUAL 0)
    string(APPEND problems "${name} failed (${status}):\n${output}\n")
  elseif(left)
    string(REPLACE ";" " " left "${left}")
    string(APPEND problems "${name} left in its temporary directory ${tmp}: ${left}\n")
  else()
    file(REMOVE_RECURSE "${tmp}")
  endif()
endforeach()
if(problems)
  message(FATAL_ERROR "${problems}")
endif()
