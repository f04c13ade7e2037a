// bench/gpu: xmc_bench, manymalloc's XMalloc and CUDA's device malloc side by
// side on every case of bench_runner.cpp's plan; CSV on stdout or --out.
#include "bench_cases.cuh"

template <class Heap>
static bool bench_supports(const BenchConfig &config) { return Heap::supports(config); }

static const BenchAllocator bench_allocators[] = {
    {"cuda", bench_supports<BenchHeapCuda>, bench_run_case<BenchHeapCuda>},
    {"xmc", bench_supports<BenchHeapXmc>, bench_run_case<BenchHeapXmc>},
};

int main(int argc, char **argv) {
  return bench_main(argc, argv, bench_allocators, 2);
}
