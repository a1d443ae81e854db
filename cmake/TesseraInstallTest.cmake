# The ctest test `install_consumer`: installs this build tree into a scratch prefix, then
# configures, builds and runs tests/install (a project that does find_package(tessera) +
# target_link_libraries(app tessera::tessera)) against that prefix.
#
# Included from the top-level CMakeLists.txt (inside TESSERA_BUILD_TESTS) it defines the test;
# run with `cmake -P` (which is what the test does) it performs the steps.

if(NOT CMAKE_SCRIPT_MODE_FILE)
  add_test(NAME install_consumer
    COMMAND ${CMAKE_COMMAND}
      -DTESSERA_BUILD_DIR=${PROJECT_BINARY_DIR}
      -DTESSERA_SOURCE_DIR=${PROJECT_SOURCE_DIR}
      -DTESSERA_WORK_DIR=${PROJECT_BINARY_DIR}/install_consumer
      -DTESSERA_GENERATOR=${CMAKE_GENERATOR}
      -DTESSERA_MAKE_PROGRAM=${CMAKE_MAKE_PROGRAM}
      -DTESSERA_CXX_COMPILER=${CMAKE_CXX_COMPILER}
      -DTESSERA_CONFIG=$<CONFIG>
      "-DTESSERA_SANITIZE=${TESSERA_SANITIZE}"
      -P ${CMAKE_CURRENT_LIST_FILE})
  # Writes the scratch folder; keep it from racing another run of itself.
  set_tests_properties(install_consumer PROPERTIES TIMEOUT 600 RESOURCE_LOCK tessera_install_consumer)
  return()
endif()

# ---- script mode ----
foreach(v TESSERA_BUILD_DIR TESSERA_SOURCE_DIR TESSERA_WORK_DIR)
  if(NOT ${v})
    message(FATAL_ERROR "install_consumer: ${v} is not set")
  endif()
endforeach()
if(NOT TESSERA_CONFIG)
  set(TESSERA_CONFIG Release)
endif()

set(prefix ${TESSERA_WORK_DIR}/prefix)
set(consumer_build ${TESSERA_WORK_DIR}/build)
file(REMOVE_RECURSE ${TESSERA_WORK_DIR})
file(MAKE_DIRECTORY ${TESSERA_WORK_DIR})

function(step name)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
  if(NOT rc EQUAL 0)
    message("${out}")
    message(FATAL_ERROR "install_consumer: ${name} failed (exit ${rc}): ${ARGN}")
  endif()
  message(STATUS "install_consumer: ${name} ok")
  set(step_output "${out}" PARENT_SCOPE)
endfunction()

step(install ${CMAKE_COMMAND} --install ${TESSERA_BUILD_DIR} --prefix ${prefix} --config ${TESSERA_CONFIG})

set(configure_args -S ${TESSERA_SOURCE_DIR}/tests/install -B ${consumer_build}
  -DCMAKE_PREFIX_PATH=${prefix} -DCMAKE_BUILD_TYPE=${TESSERA_CONFIG})
if(TESSERA_GENERATOR)
  list(APPEND configure_args -G ${TESSERA_GENERATOR})
endif()
if(TESSERA_MAKE_PROGRAM)
  list(APPEND configure_args -DCMAKE_MAKE_PROGRAM=${TESSERA_MAKE_PROGRAM})
endif()
if(TESSERA_CXX_COMPILER)
  list(APPEND configure_args -DCMAKE_CXX_COMPILER=${TESSERA_CXX_COMPILER})
endif()
# A sanitized libtessera needs the sanitizer's runtime linked into the program that loads it.
set(sanitize_flags)
if(TESSERA_SANITIZE)
  set(sanitize_flags -fsanitize=${TESSERA_SANITIZE})
  list(APPEND configure_args -DCMAKE_CXX_FLAGS=${sanitize_flags} -DCMAKE_EXE_LINKER_FLAGS=${sanitize_flags})
endif()
step(configure ${CMAKE_COMMAND} ${configure_args})
step(build ${CMAKE_COMMAND} --build ${consumer_build} --config ${TESSERA_CONFIG})

# Single-config generators put it at the top, multi-config ones under the config's folder.
set(app ${consumer_build}/app)
if(NOT EXISTS ${app})
  set(app ${consumer_build}/${TESSERA_CONFIG}/app)
endif()
step(run ${app})
message("${step_output}")

# The same program built without CMake, from the installed pkg-config file (tessera.pc).
find_program(PKG_CONFIG_EXECUTABLE NAMES pkg-config pkgconf)
if(NOT PKG_CONFIG_EXECUTABLE)
  message(FATAL_ERROR "install_consumer: pkg-config not found (scripts/setup.sh installs it)")
endif()
file(GLOB_RECURSE pc_files ${prefix}/*/tessera.pc)
list(LENGTH pc_files pc_count)
if(NOT pc_count EQUAL 1)
  message(FATAL_ERROR "install_consumer: expected one installed tessera.pc, found: ${pc_files}")
endif()
get_filename_component(pc_dir ${pc_files} DIRECTORY)
set(ENV{PKG_CONFIG_PATH} ${pc_dir})
step(pkg-config ${PKG_CONFIG_EXECUTABLE} --cflags --libs tessera)
separate_arguments(pc_flags UNIX_COMMAND "${step_output}")
step(pkg-config-variable ${PKG_CONFIG_EXECUTABLE} --variable=libdir tessera)
string(STRIP "${step_output}" pc_libdir)
set(pc_app ${TESSERA_WORK_DIR}/app_pkgconfig)
step(pkg-config-build ${TESSERA_CXX_COMPILER} ${TESSERA_SOURCE_DIR}/tests/install/main.cc ${pc_flags} ${sanitize_flags}
  -o ${pc_app})
step(pkg-config-run ${CMAKE_COMMAND} -E env LD_LIBRARY_PATH=${pc_libdir} ${pc_app})
message("${step_output}")
