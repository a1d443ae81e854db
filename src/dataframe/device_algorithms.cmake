# The dataframe device algorithms (device_algorithms.cuh) on Thrust's host system
# (device_algorithms_host.cpp): a static library the tests link, so machines without a GPU test
# the algorithms the CUDA back end runs (cuda/frame_ops.cu). It needs Thrust's headers (the CUDA
# toolkit's CCCL) but no CUDA runtime, and is built only when the headers are found.
find_path(TESSERA_THRUST_INCLUDE_DIR thrust/version.h
  HINTS ${CUDAToolkit_INCLUDE_DIRS}
  PATHS /usr/local/cuda/include /usr/include
  PATH_SUFFIXES cccl)
if(TESSERA_THRUST_INCLUDE_DIR)
  # agg_from_name / agg_name (groupby_spec.cpp) come with it; the dataframe library links it
  # (position-independent code) instead of compiling them again.
  add_library(tessera_frame_algorithms STATIC
    ${CMAKE_CURRENT_LIST_DIR}/device_algorithms_host.cpp
    ${CMAKE_CURRENT_LIST_DIR}/groupby_spec.cpp)
  set_target_properties(tessera_frame_algorithms PROPERTIES POSITION_INDEPENDENT_CODE ON)
  target_link_libraries(tessera_frame_algorithms PUBLIC tessera::tessera)
  target_include_directories(tessera_frame_algorithms PUBLIC ${PROJECT_SOURCE_DIR}/src)
  target_include_directories(tessera_frame_algorithms SYSTEM PRIVATE ${TESSERA_THRUST_INCLUDE_DIR})
  target_compile_definitions(tessera_frame_algorithms PRIVATE THRUST_DEVICE_SYSTEM=THRUST_DEVICE_SYSTEM_CPP)
  if(TESSERA_SANITIZE MATCHES "undefined")
    # Thrust's host system binds references through null system pointers (thrust::reference,
    # select_system: tag dispatch that never reads them), which UBSan's null check stops on.
    target_compile_options(tessera_frame_algorithms PRIVATE -fno-sanitize=null)
  endif()
  message(STATUS "Tessera dataframe algorithms on Thrust's host system: ON (${TESSERA_THRUST_INCLUDE_DIR})")
else()
  message(STATUS "Tessera dataframe algorithms on Thrust's host system: OFF (no Thrust headers found)")
endif()
