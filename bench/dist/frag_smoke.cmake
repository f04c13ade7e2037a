# SPDX-License-Identifier: Apache-2.0
# bench/dist/frag_smoke.cmake: the bench.dist.frag.smoke test (cmake -P, with
# -DFRAG=<dist-frag> -DOUT=<dir>). Runs dist-frag tiny into a fresh OUT and
# fails unless it exits 0 and writes each run's CSV and frag.json.
file(REMOVE_RECURSE ${OUT})
execute_process(COMMAND ${FRAG} --scale 0.01 --out ${OUT} RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "dist-frag --scale 0.01 exited with ${rc}")
endif()
foreach(name frag_a.csv frag_b.csv frag_c.csv frag.json)
  if(NOT EXISTS ${OUT}/${name})
    message(FATAL_ERROR "dist-frag did not write ${OUT}/${name}")
  endif()
  file(SIZE ${OUT}/${name} size)
  if(size EQUAL 0)
    message(FATAL_ERROR "dist-frag wrote an empty ${OUT}/${name}")
  endif()
endforeach()
