# Installs the library, headers and a package config so that another project can do
#   find_package(tessera) + target_link_libraries(app tessera::tessera)
include(CMakePackageConfigHelpers)
set(_targets tessera)
if(TESSERA_CUDA_ENABLED)
  list(APPEND _targets tessera_cuda)
endif()
# tessera::dataframe finds Arrow at run time through its RPATH (the pyarrow wheel's folder).
if(TESSERA_ARROW_ENABLED)
  list(APPEND _targets tessera_dataframe)
endif()
install(TARGETS ${_targets} EXPORT tesseraTargets
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/tessera DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(EXPORT tesseraTargets NAMESPACE tessera:: DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/tessera)
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/tesseraConfig.cmake.in
  ${PROJECT_BINARY_DIR}/tesseraConfig.cmake INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/tessera)
write_basic_package_version_file(${PROJECT_BINARY_DIR}/tesseraConfigVersion.cmake
  VERSION ${PROJECT_VERSION} COMPATIBILITY SameMajorVersion)
install(FILES ${PROJECT_BINARY_DIR}/tesseraConfig.cmake ${PROJECT_BINARY_DIR}/tesseraConfigVersion.cmake
  DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/tessera)

# pkg-config, beside the CMake package. The public headers need C++20 and cereal (found in the
# default include path on Debian: libcereal-dev); a CUDA build defines TESSERA_HAS_CUDA.
set(TESSERA_PC_CFLAGS "-std=c++20")
if(NOT CEREAL_INCLUDE_DIR STREQUAL "/usr/include")
  string(APPEND TESSERA_PC_CFLAGS " -I${CEREAL_INCLUDE_DIR}")
endif()
if(TESSERA_CUDA_ENABLED)
  string(APPEND TESSERA_PC_CFLAGS " -DTESSERA_HAS_CUDA=1")
endif()
file(RELATIVE_PATH TESSERA_PC_TO_PREFIX "/p/${CMAKE_INSTALL_LIBDIR}/pkgconfig" "/p")
configure_file(${PROJECT_SOURCE_DIR}/cmake/tessera.pc.in ${PROJECT_BINARY_DIR}/tessera.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/tessera.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
