# Checks the convention stated in tools/package/attend.hpp: every folder's umbrella
# header <folder>/<folder>.hpp is included by the umbrella header attend.hpp.
#   cmake -DSOURCE_DIR=<attend source> -P check_umbrella.cmake
file(READ "${SOURCE_DIR}/tools/package/attend.hpp" umbrella)
foreach(folder core autograd layers models)
  if(EXISTS "${SOURCE_DIR}/${folder}/${folder}.hpp")
    string(FIND "${umbrella}" "#include \"${folder}/${folder}.hpp\"" at)
    if(at EQUAL -1)
      message(FATAL_ERROR "tools/package/attend.hpp does not include \"${folder}/${folder}.hpp\"; add the line")
    endif()
  endif()
endforeach()
