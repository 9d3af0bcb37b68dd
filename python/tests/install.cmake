# python.install: installs this build into a fresh prefix and imports attend from
# PREFIX/INSTALL_DIR with nothing else of attend on the path, and checks that
# python3 searches DEFAULT_PREFIX/INSTALL_DIR (the configured prefix's) by itself.
#   cmake -DATTEND_BUILD_DIR=... -DPYTHON=... -DINSTALL_DIR=lib/python3.11/dist-packages
#         [-DDEFAULT_PREFIX=/usr/local] -DWORK_DIR=... -P install.cmake
foreach(var ATTEND_BUILD_DIR PYTHON INSTALL_DIR WORK_DIR)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "install.cmake: -D${var}=... is required")
  endif()
endforeach()
set(prefix "${WORK_DIR}/prefix")
file(REMOVE_RECURSE "${WORK_DIR}")
execute_process(COMMAND "${CMAKE_COMMAND}" --install "${ATTEND_BUILD_DIR}" --prefix "${prefix}"
                RESULT_VARIABLE code OUTPUT_QUIET)
if(NOT code EQUAL 0)
  message(FATAL_ERROR "python.install: cmake --install failed (${code})")
endif()
set(package "${prefix}/${INSTALL_DIR}/attend")
foreach(file __init__.py testing.py py.typed)
  if(NOT EXISTS "${package}/${file}")
    message(FATAL_ERROR "python.install: ${package}/${file} was not installed")
  endif()
endforeach()
# Run from the work directory with only the installed folder on the path (-I: no
# user site, no PYTHONPATH, no current directory), and check where attend came from.
execute_process(
  COMMAND "${PYTHON}" -I -c
    "import sys; sys.path.insert(0, sys.argv[1]); import attend; assert attend.__file__.startswith(sys.argv[1]), attend.__file__; t = attend.tensor([1.0, 2.0], requires_grad=True); (t * t).sum().backward(); assert t.grad.numpy().tolist() == [2.0, 4.0]; print('imported', attend.__file__)"
    "${prefix}/${INSTALL_DIR}"
  WORKING_DIRECTORY "${WORK_DIR}" RESULT_VARIABLE code)
file(REMOVE_RECURSE "${WORK_DIR}")
if(NOT code EQUAL 0)
  message(FATAL_ERROR "python.install: the installed package does not import (${code})")
endif()
# The configured prefix's folder is one this python3 searches by itself: the
# default install (/usr/local) then imports with no PYTHONPATH.
if(DEFINED DEFAULT_PREFIX)
  execute_process(COMMAND "${PYTHON}" -I -c "import sys; sys.exit(0 if sys.argv[1] in sys.path else 1)"
                          "${DEFAULT_PREFIX}/${INSTALL_DIR}" RESULT_VARIABLE code)
  if(NOT code EQUAL 0)
    message(FATAL_ERROR "python.install: ${PYTHON} does not search ${DEFAULT_PREFIX}/${INSTALL_DIR}, "
                        "where cmake --install puts attend for the prefix ${DEFAULT_PREFIX}")
  endif()
endif()
