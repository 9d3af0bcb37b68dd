# The consumer test: installs this build of attend into a fresh prefix inside the
# build tree, then configures, builds and runs tests/consumer against it, as an
# outside project would (find_package(attend) through CMAKE_PREFIX_PATH): a
# program and a doctest file with a gradient check.
#   cmake -DATTEND_BUILD_DIR=... -DCONSUMER_SOURCE_DIR=... -DWORK_DIR=... -DGENERATOR=...
#         -DCXX_COMPILER=... -DCXX_FLAGS=... -P run.cmake
foreach(var ATTEND_BUILD_DIR CONSUMER_SOURCE_DIR WORK_DIR GENERATOR CXX_COMPILER)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "run.cmake: -D${var}=... is required")
  endif()
endforeach()

set(prefix "${WORK_DIR}/prefix")
set(build "${WORK_DIR}/build")
file(REMOVE_RECURSE "${WORK_DIR}")

function(run what)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE code)
  if(NOT code EQUAL 0)
    message(FATAL_ERROR "consumer test: ${what} failed (${code}): ${ARGN}")
  endif()
endfunction()

run("install" "${CMAKE_COMMAND}" --install "${ATTEND_BUILD_DIR}" --prefix "${prefix}")
foreach(path include/attend/attend.hpp include/attend/core/tensor.hpp)
  if(NOT EXISTS "${prefix}/${path}")
    message(FATAL_ERROR "consumer test: ${path} was not installed")
  endif()
endforeach()
include("${CMAKE_CURRENT_LIST_DIR}/check_installed_headers.cmake")

run("configure" "${CMAKE_COMMAND}" -S "${CONSUMER_SOURCE_DIR}" -B "${build}" -G "${GENERATOR}"
    "-DCMAKE_CXX_COMPILER=${CXX_COMPILER}" "-DCMAKE_CXX_FLAGS=${CXX_FLAGS}" "-DCMAKE_PREFIX_PATH=${prefix}")
# find_package must have found the tree just installed, not another attend.
file(STRINGS "${build}/CMakeCache.txt" found REGEX "^attend_DIR:")
string(FIND "${found}" "${prefix}/" at)
if(NOT at GREATER -1)
  message(FATAL_ERROR "consumer test: find_package(attend) did not use ${prefix}: ${found}")
endif()
run("build" "${CMAKE_COMMAND}" --build "${build}" -j2)
run("run" "${build}/consumer")
run("run" "${build}/consumer_tests")
