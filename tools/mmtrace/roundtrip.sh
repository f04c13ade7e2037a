#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# tools.mmtrace_roundtrip: records trace-workload (two threads and a forked
# child) with mmtrace.so and replays the traces through mmdriver.
# usage: roundtrip.sh MMTRACE_SO TRACE_WORKLOAD MMDRIVER WORKDIR
set -eu
tracer=$1 workload=$2 driver=$3 dir=$4
rm -rf "$dir" && mkdir -p "$dir"
MMTRACE_OUT="$dir/workload.%p.rep" LD_PRELOAD="$tracer" "$workload"
set -- "$dir"/workload.*.rep
[ $# -eq 2 ] || { echo "expected 2 traces (parent, child), got $#: $*"; exit 1; }
for trace in "$@"; do
  # Header line 3 (num_ops) must count the request lines that follow.
  ops=$(sed -n 3p "$trace" | tr -d ' ')
  lines=$(tail -n +5 "$trace" | grep -c .)
  [ "$ops" -eq "$lines" ] || { echo "$trace: header says $ops requests, file has $lines"; exit 1; }
  for kind in a r f; do
    grep -q "^$kind " "$trace" || { echo "$trace: no '$kind' request recorded"; exit 1; }
  done
done
"$driver" -r 1 "$@"
