# cmake/gpu.cmake: how a CUDA program links the GPU allocator (manymalloc_gpu,
# relocatable device code). With device link-time optimization (nvcc -dlto)
# xmcMalloc and xmcFree are inlined into the caller's kernels instead of
# being called across the library boundary: measured on an H200, MilThreads
# 5-10% faster and alloc-all 9-22% (docs/gpu-design.md). The library carries
# both machine code (sm_90) and LTO IR (lto_90), so callers may link either way.
#
# MANYMALLOC_GPU_LTO: AUTO (default) links this project's GPU programs with
# -dlto where nvcc can device-link LTO code on this machine (a toolkit without
# libnvvm's link support cannot; the programs are then linked without), ON
# insists, OFF never.
set(MANYMALLOC_GPU_LTO AUTO CACHE STRING "Device link-time optimization of the GPU programs: AUTO, ON or OFF")

if(MANYMALLOC_GPU_LTO STREQUAL "AUTO")
  set(mm_probe_dir ${CMAKE_BINARY_DIR}/CMakeFiles/mm_gpu_lto_probe)
  file(WRITE ${mm_probe_dir}/probe.cu
       "__device__ int mm_probe_next(int x) { return x + 1; }\n"
       "__global__ void mm_probe(int *p) { *p = mm_probe_next(*p); }\n"
       "int main() { return 0; }\n")
  execute_process(
    COMMAND ${CMAKE_CUDA_COMPILER} -arch=sm_90 -rdc=true -dlto probe.cu -o probe
    WORKING_DIRECTORY ${mm_probe_dir} RESULT_VARIABLE mm_probe_rc OUTPUT_QUIET ERROR_QUIET)
  if(mm_probe_rc EQUAL 0)
    set(MANYMALLOC_GPU_LTO_ON ON)
  else()
    set(MANYMALLOC_GPU_LTO_ON OFF)
  endif()
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
