# SPDX-License-Identifier: Apache-2.0
# The linked-list exchange of the Myrmics paper (Sect. 6.5), included from
# bench/CMakeLists.txt and run by bench/dist/run_lists.py:
#   build/dist-lists        ours, linking libmanymalloc_dist;
#   build/dist-lists-mpi    hand-written MPI (pack, and bulk);
#   build/dist-lists-rma    per-node MPI-3 RMA;
#   build/dist-lists-shmem  per-node OpenSHMEM, where it is found: pkg-config
#                           oshmem, else the oshcc wrapper's own flags
#                           (oshcc --showme:compile / --showme:link).
# The peers link MPI (and OSHMEM) only, with the C library's malloc.
if(TARGET manymalloc_dist)
  add_executable(dist-lists ${CMAKE_CURRENT_LIST_DIR}/lists.c)
  target_link_libraries(dist-lists PRIVATE manymalloc_dist)
  target_compile_options(dist-lists PRIVATE -Wall -Wextra)
endif()

find_package(MPI COMPONENTS C)
if(MPI_C_FOUND)
  foreach(peer mpi rma)
    add_executable(dist-lists-${peer} ${CMAKE_CURRENT_LIST_DIR}/lists_${peer}.c)
    target_link_libraries(dist-lists-${peer} PRIVATE MPI::MPI_C)
    target_compile_options(dist-lists-${peer} PRIVATE -Wall -Wextra)
  endforeach()

  find_package(PkgConfig QUIET)
  if(PkgConfig_FOUND)
    pkg_check_modules(OSHMEM QUIET IMPORTED_TARGET oshmem)
  endif()
  set(lists_shmem_how "")
  if(OSHMEM_FOUND)
    add_executable(dist-lists-shmem ${CMAKE_CURRENT_LIST_DIR}/lists_shmem.c)
    target_link_libraries(dist-lists-shmem PRIVATE PkgConfig::OSHMEM MPI::MPI_C)
    set(lists_shmem_how "pkg-config oshmem")
  else()
    find_program(OSHCC_EXECUTABLE oshcc)
    if(OSHCC_EXECUTABLE)
      execute_process(COMMAND ${OSHCC_EXECUTABLE} --showme:compile OUTPUT_VARIABLE oshcc_compile
                      RESULT_VARIABLE oshcc_rc1 OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
      execute_process(COMMAND ${OSHCC_EXECUTABLE} --showme:link OUTPUT_VARIABLE oshcc_link
                      RESULT_VARIABLE oshcc_rc2 OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
      if(oshcc_rc1 EQUAL 0 AND oshcc_rc2 EQUAL 0 AND oshcc_link MATCHES "oshmem")
        separate_arguments(oshcc_compile UNIX_COMMAND "${oshcc_compile}")
        separate_arguments(oshcc_link UNIX_COMMAND "${oshcc_link}")
        add_executable(dist-lists-shmem ${CMAKE_CURRENT_LIST_DIR}/lists_shmem.c)
        target_compile_options(dist-lists-shmem PRIVATE ${oshcc_compile})
        target_link_libraries(dist-lists-shmem PRIVATE ${oshcc_link} MPI::MPI_C)
        set(lists_shmem_how "${OSHCC_EXECUTABLE} --showme")
      endif()
    endif()
  endif()
  if(TARGET dist-lists-shmem)
    target_compile_options(dist-lists-shmem PRIVATE -Wall -Wextra)
    message(STATUS "dist-lists-shmem: OpenSHMEM from ${lists_shmem_how}")
  else()
    message(STATUS "dist-lists-shmem skipped: no OpenSHMEM (neither pkg-config oshmem nor oshcc)")
  endif()
else()
  message(STATUS "dist-lists peers skipped: no MPI C")
endif()

# run_lists.py at a tiny size (2 workers, L = 200, one repetition, shared
# memory only): every program exits 0 with every node checked, or a peer's
# failure is recorded as such, and the report tables and draws it.
if(TARGET dist-lists)
  add_test(NAME bench.dist.lists.smoke
           COMMAND Python3::Interpreter ${CMAKE_CURRENT_LIST_DIR}/run_lists.py --build ${CMAKE_BINARY_DIR}
                   --out ${CMAKE_CURRENT_BINARY_DIR}/lists-smoke --workers 2 --lens 200 --nets shm
                   --schedulers 1 --reps 1 --timeout 60)
  set_tests_properties(bench.dist.lists.smoke PROPERTIES TIMEOUT 300)
endif()
