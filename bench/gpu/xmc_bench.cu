/* SPDX-License-Identifier: Apache-2.0 */
// bench/gpu: xmc_bench, manymalloc's XMalloc and CUDA's device malloc side by
// side on every case of bench_runner.cpp's plan, and the MilThreads kernels
// with no allocator at all (their floor); CSV on stdout or --out.
#include "bench_dispatch.cuh"

static const BenchAllocator bench_allocators[] = {
    {"cuda", BenchHeapCuda::supports, bench_run_case<BenchHeapCuda>},
    {"xmc", BenchHeapXmc::supports, bench_run_case<BenchHeapXmc>},
    {"floor", BenchHeapFloor::supports, bench_run_case<BenchHeapFloor>},
};

int main(int argc, char **argv) {
  return bench_main(argc, argv, bench_allocators, sizeof bench_allocators / sizeof bench_allocators[0]);
}
