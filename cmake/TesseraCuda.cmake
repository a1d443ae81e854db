# Decides whether the CUDA back end (cuda/) is built. AUTO builds it when nvcc is found.
set(TESSERA_CUDA_ENABLED OFF)
if(NOT TESSERA_CUDA STREQUAL "OFF")
  include(CheckLanguage)
  if(NOT CMAKE_CUDA_COMPILER AND EXISTS /usr/local/cuda/bin/nvcc)
    set(CMAKE_CUDA_COMPILER /usr/local/cuda/bin/nvcc)
  endif()
  check_language(CUDA)
  if(CMAKE_CUDA_COMPILER)
    # sm_90 machine code plus compute_90 PTX so newer GPUs can JIT it.
    if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
      set(CMAKE_CUDA_ARCHITECTURES 90-real 90-virtual)
    endif()
    enable_language(CUDA)
    # CMake 3.25 does not know nvcc's C++20 flag; device code needs only C++17.
    set(CMAKE_CUDA_STANDARD 17)
    set(CMAKE_CUDA_STANDARD_REQUIRED ON)
    # CMake 3.25.0/3.25.1 (Debian bookworm's) set a property on CUDA::nvToolsExt without checking
    # that the target exists, and CUDA 12.9+ has no libnvToolsExt (nvtx3 is header-only): the
    # configure fails. That branch only runs when the project's minimum version is 3.25 or
    # more, so it is hidden for the call.
    if(CMAKE_VERSION VERSION_LESS 3.25.2 AND CMAKE_MINIMUM_REQUIRED_VERSION VERSION_GREATER_EQUAL 3.25)
      set(_tessera_cmake_minimum ${CMAKE_MINIMUM_REQUIRED_VERSION})
      set(CMAKE_MINIMUM_REQUIRED_VERSION 3.24)
      find_package(CUDAToolkit REQUIRED)
      set(CMAKE_MINIMUM_REQUIRED_VERSION ${_tessera_cmake_minimum})
    else()
      find_package(CUDAToolkit REQUIRED)
    endif()
    set(TESSERA_CUDA_ENABLED ON)
  elseif(TESSERA_CUDA STREQUAL "ON")
    message(FATAL_ERROR "TESSERA_CUDA=ON but no CUDA compiler was found")
  endif()
endif()
message(STATUS "Tessera CUDA back end: ${TESSERA_CUDA_ENABLED}")
