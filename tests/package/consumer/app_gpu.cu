/* SPDX-License-Identifier: Apache-2.0 */
// tests/package/consumer: a kernel calling the installed GPU allocator.
#include <manymalloc/xmalloc.cuh>

__global__ void consumer_kernel(int **out) {
  int *p = static_cast<int *>(xmcMalloc(sizeof(int)));
  if (p) *p = threadIdx.x;
  out[threadIdx.x] = p;
  xmcFree(p);
}

int main() {
  if (xmcInit(size_t(64) << 20) != xmcSuccess) return 1;
  int **out = nullptr;
  cudaMalloc(&out, 32 * sizeof(int *));
  consumer_kernel<<<1, 32>>>(out);
  const bool ok = cudaDeviceSynchronize() == cudaSuccess;
  cudaFree(out);
  return xmcShutdown() == xmcSuccess && ok ? 0 : 1;
}
