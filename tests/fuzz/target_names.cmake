# attend_fuzz_target_names(OUT LIST_FILE): the names of the fuzz targets listed in
# LIST_FILE (tests/fuzz/targets.txt: NAME MAX_LEN a line), in order. Read by
# targets.cmake (the build) and by the docs checks (script mode), so that the
# list is parsed one way.
function(attend_fuzz_target_names out list_file)
  file(STRINGS "${list_file}" lines REGEX "^[a-z_]+ [0-9]+$")
  set(names "")
  foreach(line IN LISTS lines)
    string(REGEX REPLACE " .*" "" name "${line}")
    list(APPEND names "${name}")
  endforeach()
  set(${out} "${names}" PARENT_SCOPE)
endfunction()
