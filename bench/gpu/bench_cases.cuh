/* SPDX-License-Identifier: Apache-2.0 */
// bench/gpu: the host side of each benchmark case but the graph's
// (bench_graph.cuh): launches, timed repetitions and the rows it reports.
#pragma once
#include <algorithm>
#include <vector>
#include "bench_case.h"
#include "bench_heaps.cuh"
#include "bench_kernels.cuh"
#include "bench_timing.cuh"

constexpr unsigned bench_threads = 1u << 20;   // the papers' "one million threads"
constexpr size_t bench_gib = size_t(1) << 30;

// The state one case carries across its repetitions: a fresh heap for each
// one, the counters, and the pointer array the kernels keep blocks in.
template <class Heap>
class BenchRun {
public:
  BenchRun(const char *name, const BenchCase &c, size_t heap_bytes, const BenchConfig &config)
      : name_(name), case_(c), heap_bytes_(heap_bytes), config_(config) {
    BENCH_CUDA(cudaMalloc(&counters_, sizeof(BenchCounters)));
    BENCH_CUDA(cudaMalloc(&ptrs_, bench_threads * sizeof(void *)));
  }
  ~BenchRun() {
    cudaFree(counters_);
    cudaFree(ptrs_);
  }
  void begin_rep() {
    Heap::init(heap_bytes_, config_);
    BENCH_CUDA(cudaMemset(counters_, 0, sizeof(BenchCounters)));
    BENCH_CUDA(cudaMemset(ptrs_, 0, bench_threads * sizeof(void *)));
  }
  // Returns this repetition's counters and adds them to the case's totals.
  BenchCounters end_rep() {
    BENCH_CUDA(cudaDeviceSynchronize());
    BenchCounters c;
    BENCH_CUDA(cudaMemcpy(&c, counters_, sizeof c, cudaMemcpyDeviceToHost));
    totals_.nulls += c.nulls;
    totals_.bad += c.bad;
    Heap::shutdown();
    return c;
  }
  // wanted: the repetitions the case asks for; fewer were cut by the budget.
  void emit(const char *metric, const std::vector<double> &samples, const char *unit,
            int wanted = bench_reps) const {
    int reps = int(samples.size());
    BenchRow row{metric, bench_median(samples), unit, reps, totals_.nulls, totals_.bad,
                 reps >= wanted ? "ok" : "capped"};
    bench_print_row(stdout, name_, case_, row);
  }
  BenchCounters *counters() const { return counters_; }
  void **ptrs() const { return ptrs_; }
  BenchEventTimer timer;
  BenchRepetitions reps;

private:
  const char *name_;
  BenchCase case_;
  size_t heap_bytes_;
  BenchConfig config_;
  BenchCounters *counters_ = nullptr;
  void **ptrs_ = nullptr;
  BenchCounters totals_{};
};

// ---- MilThreads and thread scaling ------------------------------------------

// param = active lanes per warp; 2^20 threads do one 8-byte pair each.
template <class Heap>
void bench_case_milthreads(BenchRun<Heap> &run, int lanes) {
  unsigned launched = unsigned(bench_threads * (32ull / lanes));
  std::vector<double> ns[2];
  for (int rep = 0; run.reps.next(rep); ++rep) {
    run.begin_rep();
    for (int pass = 0; pass < 2; ++pass) {   // the second on the heap the first left
      run.timer.start();
      bench_milthreads_kernel<Heap><<<bench_grid(launched), bench_block>>>(launched, lanes, 1, 8,
                                                                           run.counters());
      float ms = run.timer.stop_ms();
      if (!BenchRepetitions::warmup(rep)) ns[pass].push_back(ms * 1e6 / bench_threads);
    }
    run.end_rep();
  }
  run.emit("ns_per_pair", ns[0], "ns");
  run.emit("ns_per_pair_steady", ns[1], "ns");
}

// param = threads; 8-byte pairs, up to 1024 per thread and 2^20 in all
// (XMalloc 2010, Fig. 8, with fewer requests below 1024 threads).
template <class Heap>
void bench_case_scaling(BenchRun<Heap> &run, unsigned threads) {
  int iters = int(std::clamp(bench_threads / threads, 1u, 1024u));
  double pairs = double(threads) * iters;
  std::vector<double> ns;
  for (int rep = 0; run.reps.next(rep); ++rep) {
    run.begin_rep();
    run.timer.start();
    bench_milthreads_kernel<Heap><<<bench_grid(threads), bench_block>>>(threads, 32, iters, 8,
                                                                        run.counters());
    float ms = run.timer.stop_ms();
    run.end_rep();
    if (!BenchRepetitions::warmup(rep)) ns.push_back(ms * 1e6 / pairs);
  }
  run.emit("ns_per_pair", ns, "ns");
}

// ---- alloc-all / free-all, churn, one allocation per warp --------------------

// The signature of the kernels that allocate into, or free from, run.ptrs().
using BenchBlocksKernel = void (*)(void **, unsigned, size_t, uint32_t, BenchCounters *);

// Times `alloc` (reported per thread, in G allocations/s) and then `release`
// of what it took (ms), apart, on a fresh heap each repetition; `check` reads
// every block back between them, untimed, so that the freeing kernel times
// frees alone. The pair then runs again on the heap the first left (the
// "_steady" rows: what a long-running code sees).
template <class Heap>
void bench_time_alloc_then_free(BenchRun<Heap> &run, size_t size, BenchBlocksKernel alloc,
                                BenchBlocksKernel check, BenchBlocksKernel release) {
  unsigned grid = bench_grid(bench_threads);
  std::vector<double> gops[2], free_ms[2];
  for (int rep = 0; run.reps.next(rep); ++rep) {
    run.begin_rep();
    for (int pass = 0; pass < 2; ++pass) {
      run.timer.start();
      alloc<<<grid, bench_block>>>(run.ptrs(), bench_threads, size, rep, run.counters());
      float alloc_ms = run.timer.stop_ms();
      check<<<grid, bench_block>>>(run.ptrs(), bench_threads, size, rep, run.counters());
      run.timer.start();
      release<<<grid, bench_block>>>(run.ptrs(), bench_threads, size, rep, run.counters());
      float release_ms = run.timer.stop_ms();
      if (BenchRepetitions::warmup(rep)) continue;
      gops[pass].push_back(bench_threads / (alloc_ms * 1e6));
      free_ms[pass].push_back(release_ms);
    }
    run.end_rep();
  }
  run.emit("alloc_gops", gops[0], "G/s");
  run.emit("free_ms", free_ms[0], "ms");
  run.emit("alloc_gops_steady", gops[1], "G/s");
  run.emit("free_ms_steady", free_ms[1], "ms");
}

// param = block size (0: mixed 16 B..4 KiB); alloc-all and free-all timed apart.
template <class Heap>
void bench_case_alloc_all(BenchRun<Heap> &run, size_t size) {
  bench_time_alloc_then_free(run, size, bench_alloc_all_kernel<Heap>, bench_check_all_kernel<Heap>,
                             bench_free_all_kernel<Heap>);
}

constexpr int bench_churn_rounds = 10;

// Mixed sizes: alloc-all, then rounds in which every thread frees its block and
// allocates one of another size; the rounds are timed together, ten and
// then ten more.
template <class Heap>
void bench_case_churn(BenchRun<Heap> &run) {
  unsigned grid = bench_grid(bench_threads);
  std::vector<double> gops[2];
  for (int rep = 0; run.reps.next(rep); ++rep) {
    run.begin_rep();
    bench_alloc_all_kernel<Heap><<<grid, bench_block>>>(run.ptrs(), bench_threads, 0, 0,
                                                        run.counters());
    uint32_t round = 0;
    for (int pass = 0; pass < 2; ++pass) {   // the second goes on from the first's heap
      run.timer.start();
      for (int k = 0; k < bench_churn_rounds; ++k)
        bench_churn_kernel<Heap><<<grid, bench_block>>>(run.ptrs(), bench_threads, ++round,
                                                        run.counters());
      float ms = run.timer.stop_ms();
      if (!BenchRepetitions::warmup(rep)) gops[pass].push_back(bench_churn_rounds * bench_threads / (ms * 1e6));
    }
    bench_check_all_kernel<Heap><<<grid, bench_block>>>(run.ptrs(), bench_threads, 0, round,
                                                        run.counters());
    bench_free_all_kernel<Heap><<<grid, bench_block>>>(run.ptrs(), bench_threads, 0, round,
                                                       run.counters());
    run.end_rep();
  }
  run.emit("churn_gops", gops[0], "G/s");
  run.emit("churn_gops_steady", gops[1], "G/s");
}

// param = bytes per thread; lane 0 allocates for its warp. Reported per
// thread, to set beside alloc_all of the same size.
template <class Heap>
void bench_case_warp_alloc(BenchRun<Heap> &run, size_t size) {
  bench_time_alloc_then_free(run, size, bench_warp_alloc_kernel<Heap>, bench_warp_check_kernel<Heap>,
                             bench_warp_free_kernel<Heap>);
}

// ---- fragmentation ------------------------------------------------------------

constexpr size_t bench_fill_heap = size_t(256) << 20;

// param = block size (0: mixed); the fraction of the heap handed out before
// each thread's first NULL. A capacity, not a time: one run on a fresh heap
// (fill_ms only says what it cost). NULLs are the point, so none are reported.
template <class Heap>
void bench_case_fill(BenchRun<Heap> &run, size_t size) {
  unsigned grid = bench_grid(bench_threads);
  run.begin_rep();
  run.timer.start();
  bench_fill_kernel<Heap><<<grid, bench_block>>>(run.ptrs(), bench_threads, size, 0, run.counters());
  float ms = run.timer.stop_ms();
  bench_unfill_kernel<Heap><<<grid, bench_block>>>(run.ptrs(), bench_threads);
  BenchCounters c = run.end_rep();
  run.emit("heap_fraction", {double(c.bytes) / bench_fill_heap}, "", 1);
  run.emit("fill_ms", {ms}, "ms", 1);
}
