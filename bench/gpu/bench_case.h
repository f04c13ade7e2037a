/* SPDX-License-Identifier: Apache-2.0 */
// bench/gpu: what names one benchmark case (the unit a child process runs),
// and the allocator configuration a case asks for. Plain C++: shared by the
// runner and the CUDA side.
#pragma once
#include <cstdio>
#include <string>

// An allocator configuration by name: "default", "nocoal" (no warp-level
// coalescing), "nosuper" (no superblocks), "buf<N>" (N FIFO buffers per class).
struct BenchConfig {
  bool coalescing = true;
  bool superblocks = true;
  int buffers_per_class = 0;   // 0: the allocator's own choice

  // False for an unknown name; `out` may be null (only the check wanted).
  static bool parse(const std::string &name, BenchConfig *out);
  bool is_default() const { return coalescing && superblocks && buffers_per_class == 0; }
};

inline bool BenchConfig::parse(const std::string &name, BenchConfig *out) {
  BenchConfig c;
  if (name == "nocoal") c.coalescing = false;
  else if (name == "nosuper") c.superblocks = false;
  else if (name.rfind("buf", 0) == 0) c.buffers_per_class = std::stoi(name.substr(3));
  else if (name != "default") return false;
  if (out) *out = c;
  return true;
}

struct BenchCase {
  std::string bench;    // milthreads, scaling, alloc_all, churn, warp_alloc, fill, graph
  std::string config;   // a BenchConfig name
  long param;           // lanes, threads or block size (0: mixed sizes)
};

// One line of results.csv; see bench_runner.cpp for the columns.
struct BenchRow {
  const char *metric;
  double value;
  const char *unit;
  int reps;                     // timed repetitions behind the median
  unsigned long long nulls;     // NULLs over all repetitions, warm-up included
  unsigned long long bad;       // blocks whose contents did not read back
  const char *status;           // ok, capped (fewer than bench_reps), failed, timeout
};

void bench_print_row(FILE *out, const char *allocator, const BenchCase &c, const BenchRow &row);

// One allocator a benchmark binary can run: its name as written in the CSV,
// whether it runs a case (its benchmark and configuration), and the entry
// point of a child process.
struct BenchAllocator {
  const char *name;
  bool (*supports)(const BenchCase &c);
  int (*run_case)(const char *name, const BenchCase &c);   // prints rows, returns an exit code
};

// The main of a benchmark binary; see bench_runner.cpp for the command line.
int bench_main(int argc, char **argv, const BenchAllocator *allocators, int count);
