# The API reference (Doxygen, from the public headers only): target tessera_docs, and the
# ctest test doxygen_public_headers, which fails on any Doxygen warning so the public headers'
# comments stay well-formed. Skipped (no target, no test) where Doxygen is not installed.
find_package(Doxygen QUIET)
if(NOT DOXYGEN_FOUND)
  message(STATUS "Doxygen not found: no tessera_docs target")
  return()
endif()
set(TESSERA_DOCS_OUTPUT ${PROJECT_BINARY_DIR}/docs/api)
configure_file(${PROJECT_SOURCE_DIR}/docs/Doxyfile.in ${PROJECT_BINARY_DIR}/Doxyfile @ONLY)
add_custom_target(tessera_docs
  COMMAND ${CMAKE_COMMAND} -E make_directory ${TESSERA_DOCS_OUTPUT}
  COMMAND ${DOXYGEN_EXECUTABLE} ${PROJECT_BINARY_DIR}/Doxyfile
  WORKING_DIRECTORY ${PROJECT_BINARY_DIR}
  COMMENT "Doxygen: API reference in ${TESSERA_DOCS_OUTPUT}/html"
  VERBATIM)
if(TESSERA_BUILD_TESTS)
  add_test(NAME doxygen_public_headers
    COMMAND ${CMAKE_COMMAND} --build ${PROJECT_BINARY_DIR} --target tessera_docs)
  set_tests_properties(doxygen_public_headers PROPERTIES TIMEOUT 300)
endif()
