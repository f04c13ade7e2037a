# SPDX-License-Identifier: Apache-2.0
# tests/package/check.cmake: installs the build tree BUILD_DIR into a scratch
# prefix under WORK_DIR, then builds the consumer project against it
# (find_package) and runs it, and compiles its program once more with the
# flags pkg-config gives. Run with cmake -P.
function(mm_run what)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${what} failed (${rc}):\n${out}\n${err}")
  endif()
  set(mm_out "${out}" PARENT_SCOPE)
endfunction()

function(mm_expect_consumer_line out where)
  if(NOT out MATCHES "manymalloc consumer: usable ok, realloc ok")
    message(FATAL_ERROR "${where}: unexpected output: ${out}")
  endif()
endfunction()

set(prefix ${WORK_DIR}/prefix)
file(REMOVE_RECURSE ${WORK_DIR})
mm_run("install" ${CMAKE_COMMAND} --install ${BUILD_DIR} --prefix ${prefix})
foreach(file lib/libmanymalloc.so lib/libmanymalloc.a include/manymalloc/manymalloc.h
             lib/libmanymalloc_dist.so lib/libmanymalloc_dist.a include/manymalloc/myrmics.h
             lib/pkgconfig/manymalloc_dist.pc
             lib/cmake/manymalloc/manymalloc-config.cmake lib/pkgconfig/manymalloc.pc)
  if(NOT EXISTS ${prefix}/${file})
    message(FATAL_ERROR "install left out ${file}")
  endif()
endforeach()
if(WITH_CUDA AND NOT EXISTS ${prefix}/lib/libmanymalloc_gpu.a)
  message(FATAL_ERROR "install left out lib/libmanymalloc_gpu.a")
endif()

mm_run("configure the consumer" ${CMAKE_COMMAND} -S ${SOURCE_DIR}/consumer -B ${WORK_DIR}/build
       -DCMAKE_PREFIX_PATH=${prefix} -DWITH_CUDA=${WITH_CUDA})
mm_run("build the consumer" ${CMAKE_COMMAND} --build ${WORK_DIR}/build)
foreach(app app app_static)
  mm_run("run ${app}" ${WORK_DIR}/build/${app})
  mm_expect_consumer_line("${mm_out}" ${app})
endforeach()

set(ENV{OMPI_ALLOW_RUN_AS_ROOT} 1)
set(ENV{OMPI_ALLOW_RUN_AS_ROOT_CONFIRM} 1)
set(ENV{OMPI_MCA_btl_vader_single_copy_mechanism} none)
mm_run("run app_dist" mpiexec --oversubscribe -np 3 ${WORK_DIR}/build/app_dist)
if(NOT mm_out MATCHES "manymalloc dist consumer: region ok")
  message(FATAL_ERROR "app_dist: unexpected output: ${mm_out}")
endif()

find_program(mm_pkg_config pkg-config)
if(mm_pkg_config)
  set(ENV{PKG_CONFIG_PATH} ${prefix}/lib/pkgconfig)
  mm_run("pkg-config" ${mm_pkg_config} --define-variable=prefix=${prefix} --cflags --libs manymalloc)
  separate_arguments(flags UNIX_COMMAND "${mm_out}")
  mm_run("cc with pkg-config's flags" cc ${SOURCE_DIR}/consumer/app.c ${flags} -Wl,-rpath,${prefix}/lib
         -o ${WORK_DIR}/app_pc)
  mm_run("run app_pc" ${WORK_DIR}/app_pc)
  mm_expect_consumer_line("${mm_out}" app_pc)
  # mpicc brings MPI's flags: --define-variable would move ompi-c's prefix too.
  mm_run("pkg-config dist" ${mm_pkg_config} --define-variable=prefix=${prefix} --cflags --libs manymalloc_dist)
  separate_arguments(flags UNIX_COMMAND "${mm_out}")
  mm_run("mpicc with pkg-config's dist flags" mpicc ${SOURCE_DIR}/consumer/app_dist.c ${flags}
         -Wl,-rpath,${prefix}/lib -o ${WORK_DIR}/app_dist_pc)
  mm_run("run app_dist_pc" mpiexec --oversubscribe -np 3 ${WORK_DIR}/app_dist_pc)
endif()
