# Locates CUDA 13's stub libcuda.so: its dynamic symbol table is the list of driver entry points
# the interposer must export. Only read at build time, never linked into streampool's libraries.
find_file(STREAMPOOL_CUDA_STUB libcuda.so
  PATHS ${CUDAToolkit_LIBRARY_DIR}/stubs ${CUDAToolkit_TARGET_DIR}/lib/stubs ${CUDAToolkit_TARGET_DIR}/lib64/stubs
  NO_DEFAULT_PATH REQUIRED)
find_program(STREAMPOOL_NM NAMES nm REQUIRED)
find_package(Python3 REQUIRED COMPONENTS Interpreter)
