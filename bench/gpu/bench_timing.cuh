/* SPDX-License-Identifier: Apache-2.0 */
// bench/gpu: how a case is timed: CUDA events around each kernel, a warm-up
// repetition first, the median of the rest, and a wall-clock budget so that a
// slow allocator runs fewer repetitions instead of being killed.
#pragma once
#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <vector>
#include "bench_device.cuh"

constexpr int bench_reps = 5;   // timed repetitions after the warm-up

class BenchEventTimer {
public:
  BenchEventTimer() {
    BENCH_CUDA(cudaEventCreate(&start_));
    BENCH_CUDA(cudaEventCreate(&stop_));
  }
  ~BenchEventTimer() {
    cudaEventDestroy(start_);
    cudaEventDestroy(stop_);
  }
  void start() { BENCH_CUDA(cudaEventRecord(start_)); }
  // Waits for the kernel, so that a launch failure surfaces here.
  float stop_ms() {
    BENCH_CUDA(cudaGetLastError());
    BENCH_CUDA(cudaEventRecord(stop_));
    BENCH_CUDA(cudaEventSynchronize(stop_));
    float ms = 0;
    BENCH_CUDA(cudaEventElapsedTime(&ms, start_, stop_));
    return ms;
  }
private:
  cudaEvent_t start_, stop_;
};

inline double bench_median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

// Decides how many repetitions a case gets: one warm-up plus bench_reps, or
// fewer when the next one would overrun the budget the parent gave the child
// (BENCH_BUDGET_S); the case is then reported as "capped".
class BenchRepetitions {
public:
  BenchRepetitions() : begin_(clock::now()) {
    const char *s = getenv("BENCH_BUDGET_S");
    budget_s_ = s ? atof(s) * 0.8 : 1e9;
  }
  // Call before each repetition; rep 0 is the warm-up.
  bool next(int rep) {
    double now = seconds();
    if (rep > 0) last_s_ = now - mark_s_;
    mark_s_ = now;
    if (rep > bench_reps) return false;
    if (rep > 1 && now + last_s_ > budget_s_) return false;
    return true;
  }
  static bool warmup(int rep) { return rep == 0; }
private:
  using clock = std::chrono::steady_clock;
  double seconds() const {
    return std::chrono::duration<double>(clock::now() - begin_).count();
  }
  clock::time_point begin_;
  double budget_s_, mark_s_ = 0, last_s_ = 0;
};
