/* SPDX-License-Identifier: Apache-2.0 */
// bench/gpu: which case a child process runs, on how large a heap.
// bench_run_case<Heap> is the entry point of a child (see bench_runner.cpp).
#pragma once
#include "bench_cases.cuh"
#include "bench_graph.cuh"

// The heap each benchmark gets: room for its blocks twice over, at least 1 GiB.
inline size_t bench_heap_bytes(const BenchCase &c) {
  if (c.bench == "fill") return bench_fill_heap;
  if (c.bench == "alloc_all" || c.bench == "churn") {
    size_t block = c.bench == "alloc_all" && c.param ? size_t(c.param) : bench_max_size;
    return std::max(bench_gib, 2 * bench_threads * block);
  }
  return bench_gib;
}

template <class Heap>
int bench_run_case(const char *name, const BenchCase &c) {
  BenchConfig config;
  if (!BenchConfig::parse(c.config, &config) || !Heap::supports(c)) {
    fprintf(stderr, "%s: no configuration %s\n", name, c.config.c_str());
    return 2;
  }
  BenchRun<Heap> run(name, c, bench_heap_bytes(c), config);
  if (c.bench == "milthreads") bench_case_milthreads(run, int(c.param));
  else if (c.bench == "scaling") bench_case_scaling(run, unsigned(c.param));
  else if (c.bench == "alloc_all") bench_case_alloc_all(run, size_t(c.param));
  else if (c.bench == "churn") bench_case_churn(run);
  else if (c.bench == "warp_alloc") bench_case_warp_alloc(run, size_t(c.param));
  else if (c.bench == "fill") bench_case_fill(run, size_t(c.param));
  else if (c.bench == "graph") bench_case_graph(run);
  else {
    fprintf(stderr, "no benchmark %s\n", c.bench.c_str());
    return 2;
  }
  return 0;
}
