# MLIR / LLVM 19 (Debian) for the folders that use them: dialects/, compiler/
# and the lit suite in test/. Each includes this file, so MLIR's definitions,
# include paths, compile flags and imported targets stay in those folders:
# the runtime builds without MLIR (LAP_BUILD_COMPILER=OFF, preset "runtime").
find_package(MLIR REQUIRED CONFIG)
set(LLVM_LIT_ARGS "-sv" CACHE STRING "")
# Debian ships no llvm-lit; lit.py lives in LLVM's build tree.
find_program(LLVM_EXTERNAL_LIT NAMES lit lit.py llvm-lit
  PATHS "${LLVM_TOOLS_BINARY_DIR}" "${LLVM_TOOLS_BINARY_DIR}/../build/utils/lit"
  NO_DEFAULT_PATH REQUIRED)
set(LLVM_RUNTIME_OUTPUT_INTDIR ${CMAKE_BINARY_DIR}/bin)
set(LLVM_LIBRARY_OUTPUT_INTDIR ${CMAKE_BINARY_DIR}/lib)
set(MLIR_BINARY_DIR ${CMAKE_BINARY_DIR})
list(APPEND CMAKE_MODULE_PATH "${MLIR_CMAKE_DIR}" "${LLVM_CMAKE_DIR}")
separate_arguments(LLVM_DEFINITIONS_LIST NATIVE_COMMAND ${LLVM_DEFINITIONS})
add_definitions(${LLVM_DEFINITIONS_LIST})
include(TableGen)
include(AddLLVM)
include(AddMLIR)
include(HandleLLVMOptions)
include_directories(SYSTEM ${LLVM_INCLUDE_DIRS} ${MLIR_INCLUDE_DIRS})
