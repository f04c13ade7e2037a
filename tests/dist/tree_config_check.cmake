# SPDX-License-Identifier: Apache-2.0
# tree_config_check.cmake: starts tree_init_app (APP) under mpiexec (MPIEXEC)
# with good and bad MANYMALLOC_SCHEDULERS / MANYMALLOC_WORKERS_PER_SCHEDULER
# (and MANYMALLOC_DIST_IDLE, how an idle scheduler waits) and checks each run: a good one serves every worker on the leaf it
# expects; a bad one fails in sys_init (SYS_ERR_ARG where the value is bad),
# runs no worker, and prints one line naming the variable. Run with cmake -P.

# tree_run(<ok> <np> <pattern> <VAR=value>...): runs, checks the exit
# status and that the output matches pattern; leaves it in tree_out.
function(tree_run expect_ok np pattern)
  execute_process(COMMAND ${CMAKE_COMMAND} -E env --unset=MANYMALLOC_SCHEDULERS
                          --unset=MANYMALLOC_WORKERS_PER_SCHEDULER --unset=MANYMALLOC_DIST_QUIET
                          --unset=MANYMALLOC_DIST_IDLE ${ARGN}
                          ${MPIEXEC} --oversubscribe --bind-to none -np ${np} ${APP}
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err TIMEOUT 60)
  set(all "${out}${err}")
  if(expect_ok AND NOT rc EQUAL 0)
    message(FATAL_ERROR "-np ${np} ${ARGN}: failed (${rc}):\n${all}")
  elseif(NOT expect_ok AND rc EQUAL 0)
    message(FATAL_ERROR "-np ${np} ${ARGN}: succeeded where it must not:\n${all}")
  endif()
  if(NOT all MATCHES "${pattern}")
    message(FATAL_ERROR "-np ${np} ${ARGN}: no line matching '${pattern}' in:\n${all}")
  endif()
  if(NOT expect_ok AND all MATCHES "tree_init: worker")
    message(FATAL_ERROR "-np ${np} ${ARGN}: a worker ran although sys_init was refused:\n${all}")
  endif()
  set(tree_out "${all}" PARENT_SCOPE)
endfunction()

# A refused configuration: sys_init returns code on every rank, and one line
# on stderr (from one rank) names the variable with its value.
function(tree_refused np code line)
  tree_run(FALSE ${np} "sys_init returned ${code} " ${ARGN})
  # A ";" in a line would split it in two as a list element.
  string(REPLACE ";" "," text "${tree_out}")
  string(REGEX MATCHALL "manymalloc:[^\n]*" lines "${text}")
  list(LENGTH lines n)
  if(NOT n EQUAL 1)
    message(FATAL_ERROR "-np ${np} ${ARGN}: ${n} lines from the library, not one:\n${tree_out}")
  endif()
  if(NOT lines MATCHES "${line}")
    message(FATAL_ERROR "-np ${np} ${ARGN}: the line does not match '${line}':\n${tree_out}")
  endif()
endfunction()

# Each worker's leaf: "<worker>:<leaf>" pairs, on np ranks.
function(tree_expect_leaves np workers schedulers levels pairs)
  foreach(pair ${pairs})
    string(REPLACE ":" ";" wl "${pair}")
    list(GET wl 0 w)
    list(GET wl 1 leaf)
    math(EXPR leaf_level "${levels} - 1")
    if(NOT tree_out MATCHES "tree_init: worker ${w} of ${workers}, comm rank ${w}, world rank [0-9]+, leaf scheduler ${leaf} level ${leaf_level}, ${schedulers} schedulers ${levels} levels, status 0 0")
      message(FATAL_ERROR "-np ${np}: worker ${w} is not served by leaf ${leaf} of a ${schedulers}-scheduler tree:\n${tree_out}")
    endif()
  endforeach()
endfunction()

set(ARG -1)   # SYS_ERR_ARG

# ---- good ---------------------------------------------------------------------
tree_run(TRUE 4 "worker 2 of 3")
tree_expect_leaves(4 3 1 1 "0:0;1:0;2:0")
tree_run(TRUE 7 "worker 3 of 4" MANYMALLOC_SCHEDULERS=1,2)
tree_expect_leaves(7 4 3 2 "0:1;1:1;2:2;3:2")
tree_run(TRUE 7 "worker 3 of 4" MANYMALLOC_SCHEDULERS=1,2 MANYMALLOC_WORKERS_PER_SCHEDULER=2)
tree_expect_leaves(7 4 3 2 "0:1;1:1;2:2;3:2")
# Five workers over two leaves: three and two.
tree_run(TRUE 8 "worker 4 of 5" MANYMALLOC_SCHEDULERS=1,2)
tree_expect_leaves(8 5 3 2 "0:1;1:1;2:1;3:2;4:2")
tree_run(TRUE 11 "worker 3 of 4" MANYMALLOC_SCHEDULERS=1,2,4)
tree_expect_leaves(11 4 7 3 "0:3;1:4;2:5;3:6")
tree_run(TRUE 4 "worker 1 of 2" MANYMALLOC_SCHEDULERS=1,1)
tree_expect_leaves(4 2 2 2 "0:1;1:1")
# Schedulers that nap when idle, or always spin, serve the same.
tree_run(TRUE 7 "worker 3 of 4" MANYMALLOC_SCHEDULERS=1,2 MANYMALLOC_DIST_IDLE=nap)
tree_expect_leaves(7 4 3 2 "0:1;1:1;2:2;3:2")
tree_run(TRUE 4 "worker 2 of 3" MANYMALLOC_DIST_IDLE=spin)
tree_expect_leaves(4 3 1 1 "0:0;1:0;2:0")

# ---- bad ----------------------------------------------------------------------
tree_refused(7 ${ARG} "MANYMALLOC_SCHEDULERS=2,4" MANYMALLOC_SCHEDULERS=2,4)
tree_refused(11 ${ARG} "MANYMALLOC_SCHEDULERS=1,3,4" MANYMALLOC_SCHEDULERS=1,3,4)
tree_refused(7 ${ARG} "MANYMALLOC_SCHEDULERS=x" MANYMALLOC_SCHEDULERS=x)
tree_refused(7 ${ARG} "MANYMALLOC_SCHEDULERS=1,0" MANYMALLOC_SCHEDULERS=1,0)
# 1,2 with 2 workers a leaf needs exactly 7 ranks.
tree_refused(8 ${ARG} "MANYMALLOC_WORKERS_PER_SCHEDULER=2.*7 MPI ranks.*8 were started|7 MPI ranks.*8 were started.*MANYMALLOC_WORKERS_PER_SCHEDULER"
             MANYMALLOC_SCHEDULERS=1,2 MANYMALLOC_WORKERS_PER_SCHEDULER=2)
tree_refused(6 ${ARG} "MANYMALLOC_WORKERS_PER_SCHEDULER" MANYMALLOC_SCHEDULERS=1,2 MANYMALLOC_WORKERS_PER_SCHEDULER=2)
tree_refused(7 ${ARG} "MANYMALLOC_WORKERS_PER_SCHEDULER=0" MANYMALLOC_SCHEDULERS=1,2 MANYMALLOC_WORKERS_PER_SCHEDULER=0)
tree_refused(4 ${ARG} "MANYMALLOC_DIST_IDLE=fast" MANYMALLOC_DIST_IDLE=fast)
# Too few ranks for the tree (3 schedulers and a worker a leaf need 5): refused
# with some code, saying how many are needed.
tree_run(FALSE 4 "sys_init returned -[0-9]+ " MANYMALLOC_SCHEDULERS=1,2)
if(NOT tree_out MATCHES "manymalloc:[^\n]*5 MPI ranks[^\n]*4 were started")
  message(FATAL_ERROR "-np 4 MANYMALLOC_SCHEDULERS=1,2: no line saying that 5 ranks are needed:\n${tree_out}")
endif()
tree_run(FALSE 10 "sys_init returned -[0-9]+ " MANYMALLOC_SCHEDULERS=1,2,4)
