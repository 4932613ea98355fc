# Detects CUDA 13 (nvcc, cuBLASLt, NCCL) and enables it, building sm_90a
# machine code (Hopper's wgmma: runtime/kernels/cuda/WarpGroupMma.h) and the
# compute_80 and compute_90 PTX that GPUs of compute capability 8.0 and later
# compile when they load it (lapc --gpu).
# Sets LAP_HAVE_CUDA. Without CUDA the project configures, builds and tests.
set(LAP_HAVE_CUDA OFF)
if(NOT LAP_CUDA STREQUAL "OFF")
  include(CheckLanguage)
  if(NOT CMAKE_CUDA_COMPILER AND EXISTS /usr/local/cuda/bin/nvcc)
    set(CMAKE_CUDA_COMPILER /usr/local/cuda/bin/nvcc)
  endif()
  check_language(CUDA)
  if(CMAKE_CUDA_COMPILER)
    if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
      # "native" fails to configure without a GPU.
      set(CMAKE_CUDA_ARCHITECTURES 80-virtual 90a-real 90-virtual)
    endif()
    # nvcc's host compiler stays GCC: CUDA 13 supports it without flags.
    if(NOT DEFINED CMAKE_CUDA_HOST_COMPILER)
      find_program(LAP_CUDA_HOST_CXX NAMES g++)
      set(CMAKE_CUDA_HOST_COMPILER ${LAP_CUDA_HOST_CXX})
    endif()
    enable_language(CUDA)
    find_package(CUDAToolkit REQUIRED)
    find_path(NCCL_INCLUDE_DIR nccl.h HINTS ${CUDAToolkit_INCLUDE_DIRS})
    find_library(NCCL_LIBRARY nccl HINTS ${CUDAToolkit_LIBRARY_DIR})
    if(NCCL_INCLUDE_DIR AND NCCL_LIBRARY)
      add_library(NCCL::nccl SHARED IMPORTED)
      set_target_properties(NCCL::nccl PROPERTIES IMPORTED_LOCATION "${NCCL_LIBRARY}"
        INTERFACE_INCLUDE_DIRECTORIES "${NCCL_INCLUDE_DIR}")
      set(LAP_HAVE_CUDA ON)
    elseif(LAP_CUDA STREQUAL "ON")
      message(FATAL_ERROR "LAP_CUDA=ON but NCCL (nccl.h, libnccl) was not found")
    endif()
  elseif(LAP_CUDA STREQUAL "ON")
    message(FATAL_ERROR "LAP_CUDA=ON but no CUDA compiler was found")
  endif()
endif()
if(LAP_HAVE_CUDA)
  message(STATUS "CUDA ${CUDAToolkit_VERSION}: building for ${CMAKE_CUDA_ARCHITECTURES}")
else()
  message(STATUS "CUDA not found: building without the CUDA backend")
endif()
