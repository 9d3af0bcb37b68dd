# Checks the convention stated in tools/package/attend.hpp: every library folder's
# umbrella header <folder>/<folder>.hpp includes each public header of the folder
# and its subfolders (every .hpp outside detail/), and no detail/ header; and
# attend.hpp includes every umbrella header. So the public API is exactly what
# <attend/attend.hpp> brings in, and what is installed.
#   cmake -DSOURCE_DIR=<attend source> -P check_umbrella.cmake
file(READ "${SOURCE_DIR}/tools/package/attend.hpp" umbrella)
set(problems "")
foreach(folder core autograd layers models)
  string(FIND "${umbrella}" "#include \"${folder}/${folder}.hpp\"" at)
  if(at EQUAL -1)
    string(APPEND problems "tools/package/attend.hpp does not include \"${folder}/${folder}.hpp\"\n")
  endif()
  file(READ "${SOURCE_DIR}/${folder}/${folder}.hpp" folder_umbrella)
  file(GLOB_RECURSE headers RELATIVE "${SOURCE_DIR}" "${SOURCE_DIR}/${folder}/*.hpp")
  foreach(header IN LISTS headers)
    string(FIND "${folder_umbrella}" "#include \"${header}\"" at)
    if(header MATCHES "/detail/")
      if(NOT at EQUAL -1)
        string(APPEND problems "${folder}/${folder}.hpp includes the implementation header ${header}\n")
      endif()
    elseif(NOT header STREQUAL "${folder}/${folder}.hpp" AND at EQUAL -1)
      string(APPEND problems "${folder}/${folder}.hpp does not include the public header ${header} "
                             "(include it there, or move it to a detail/ folder if it is not API)\n")
    endif()
  endforeach()
endforeach()
if(problems)
  message(FATAL_ERROR "${problems}")
endif()
