# SPDX-License-Identifier: Apache-2.0
# layout_check.cmake: starts layout_app (APP) under mpiexec (MPIEXEC) in
# several layouts, and checks each run's exit status and output. Run with
# cmake -P.
function(layout_run expect_ok pattern)
  execute_process(COMMAND ${CMAKE_COMMAND} -E env ${ARGN} ${MPIEXEC} --oversubscribe -np ${NP} ${APP}
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err TIMEOUT 60)
  set(all "${out}${err}")
  if(expect_ok AND NOT rc EQUAL 0)
    message(FATAL_ERROR "-np ${NP} ${ARGN}: failed (${rc}):\n${all}")
  elseif(NOT expect_ok AND rc EQUAL 0)
    message(FATAL_ERROR "-np ${NP} ${ARGN}: succeeded where it must not:\n${all}")
  endif()
  if(NOT all MATCHES "${pattern}")
    message(FATAL_ERROR "-np ${NP} ${ARGN}: no line matching '${pattern}' in:\n${all}")
  endif()
  set(layout_out "${all}" PARENT_SCOPE)
endfunction()

# Three workers under one scheduler: each runs myrmics_main once.
set(NP 4)
layout_run(TRUE "layout: worker 2 of 3, worker comm 3")
foreach(w 0 1 2)
  string(REGEX MATCHALL "layout: worker ${w} of 3" lines "${layout_out}")
  list(LENGTH lines n)
  if(NOT n EQUAL 1)
    message(FATAL_ERROR "worker ${w} ran myrmics_main ${n} times:\n${layout_out}")
  endif()
endforeach()

# One rank is a scheduler with no worker: refused, saying how many to start.
set(NP 1)
layout_run(FALSE "need at least 2 MPI ranks, but 1 were started")

# Bad options are refused by name.
set(NP 2)
layout_run(FALSE "MANYMALLOC_DIST_SPACE=12Q" MANYMALLOC_DIST_SPACE=12Q)
layout_run(FALSE "MANYMALLOC_SCHEDULERS=1,4" MANYMALLOC_SCHEDULERS=1,4)
layout_run(TRUE "layout: worker 0 of 1" MANYMALLOC_DIST_SPACE=1G)
