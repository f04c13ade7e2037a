# SPDX-License-Identifier: Apache-2.0
# cmake/gpu.cmake: how a CUDA program links the GPU allocator (manymalloc_gpu,
# relocatable device code). With device link-time optimization (nvcc -dlto)
# xmcMalloc and xmcFree are inlined into the caller's kernels instead of
# being called across the library boundary, which is faster
# (docs/decisions/0063-gpu-device-lto.md). The library carries
# both machine code (sm_90) and LTO IR (lto_90), so callers may link either way.
#
# MANYMALLOC_GPU_LTO: AUTO (default) links this project's GPU programs with
# -dlto where nvcc can device-link LTO code on this machine (a toolkit without
# libnvvm's link support cannot; the programs are then linked without), ON
# insists, OFF never.
set(MANYMALLOC_GPU_LTO AUTO CACHE STRING "Device link-time optimization of the GPU programs: AUTO, ON or OFF")

# AUTO's probe runs once per build tree and compiler; its verdict is cached.
if(MANYMALLOC_GPU_LTO STREQUAL "AUTO" AND NOT MM_GPU_LTO_PROBED STREQUAL CMAKE_CUDA_COMPILER)
  set(mm_probe_dir ${CMAKE_BINARY_DIR}/CMakeFiles/mm_gpu_lto_probe)
  file(WRITE ${mm_probe_dir}/probe.cu
       "__device__ int mm_probe_next(int x) { return x + 1; }\n"
       "__global__ void mm_probe(int *p) { *p = mm_probe_next(*p); }\n"
       "int main() { return 0; }\n")
  execute_process(
    COMMAND ${CMAKE_CUDA_COMPILER} -arch=sm_90 -rdc=true -dlto probe.cu -o probe
    WORKING_DIRECTORY ${mm_probe_dir} RESULT_VARIABLE mm_probe_rc OUTPUT_QUIET ERROR_QUIET)
  if(mm_probe_rc EQUAL 0)
    set(MM_GPU_LTO_PROBE_OK ON CACHE INTERNAL "nvcc can device-link LTO code")
  else()
    set(MM_GPU_LTO_PROBE_OK OFF CACHE INTERNAL "nvcc can device-link LTO code")
  endif()
  set(MM_GPU_LTO_PROBED ${CMAKE_CUDA_COMPILER} CACHE INTERNAL "the compiler MM_GPU_LTO_PROBE_OK is for")
endif()
if(MANYMALLOC_GPU_LTO STREQUAL "AUTO")
  set(MANYMALLOC_GPU_LTO_ON ${MM_GPU_LTO_PROBE_OK})
else()
  set(MANYMALLOC_GPU_LTO_ON ${MANYMALLOC_GPU_LTO})
endif()
message(STATUS "GPU programs linked with device LTO: ${MANYMALLOC_GPU_LTO_ON}")

# The code generation flags of a translation unit that LTO may inline into.
set(MANYMALLOC_GPU_LTO_GENCODE -gencode=arch=compute_90,code=lto_90)

# manymalloc_gpu_link(<target>): <target>'s kernels call the GPU allocator.
function(manymalloc_gpu_link target)
  target_link_libraries(${target} PRIVATE manymalloc_gpu)
  set_target_properties(${target} PROPERTIES CUDA_SEPARABLE_COMPILATION ON CUDA_ARCHITECTURES 90)
  if(MANYMALLOC_GPU_LTO_ON)
    target_compile_options(${target} PRIVATE $<$<COMPILE_LANGUAGE:CUDA>:${MANYMALLOC_GPU_LTO_GENCODE}>)
    target_link_options(${target} PRIVATE $<DEVICE_LINK:-dlto>)
  endif()
endfunction()
