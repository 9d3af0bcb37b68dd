# Checks that README.md shows the consumer programs as they are: each file of
# tests/consumer/ named below must stand in README.md word for word, so the
# README's examples are the ones the consumer test compiles and runs.
#   cmake -DSOURCE_DIR=<attend source> -P check_readme.cmake
file(READ "${SOURCE_DIR}/README.md" readme)
foreach(name main.cpp gradcheck_test.cpp)
  file(READ "${SOURCE_DIR}/tests/consumer/${name}" code)
  string(FIND "${readme}" "${code}" at)
  if(at EQUAL -1)
    message(FATAL_ERROR "README.md does not show tests/consumer/${name} as it is; copy the file into its code block")
  endif()
endforeach()
