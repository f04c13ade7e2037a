/* SPDX-License-Identifier: Apache-2.0 */
// manymalloc gpu/: xmc::allocator<T>, the standard allocator over the XMalloc
// heap, for device code: containers and cuda::std::allocator_traits get
// their storage from xmcMalloc and give it back with xmcFree.
//
//   #include <manymalloc/xmalloc_allocator.cuh>
//   using traits = cuda::std::allocator_traits<xmc::allocator<Node>>;
//   xmc::allocator<Node> a;
//   Node *n = traits::allocate(a, 4);      // in a kernel; NULL when the heap is full
//   traits::construct(a, n, args...);  ...  traits::destroy(a, n);
//   traits::deallocate(a, n, 4);
//
// allocate and deallocate are device functions: the heap lives on the GPU.
// Device code has no exceptions, so allocate returns NULL where the standard
// allocator would throw bad_alloc; the caller checks. Every xmc::allocator
// is equal to every other: all draw on the one heap of the device.
#pragma once
#include <cstddef>
#include <cstdint>
#include <cuda/std/type_traits>
#include "manymalloc/xmalloc.cuh"

namespace xmc {

// Storage for n objects aligned for T: xmcMalloc's blocks are 16-byte aligned,
// over-aligned types go through xmcAlignedAlloc.
__device__ inline void *allocate_bytes(size_t n, size_t size, size_t alignment) {
  if (size && n > SIZE_MAX / size) return nullptr;
  return alignment <= 16 ? xmcMalloc(n * size) : xmcAlignedAlloc(alignment, n * size);
}

template <class T>
struct allocator {
  using value_type = T;
  using size_type = size_t;
  using difference_type = ptrdiff_t;
  using propagate_on_container_copy_assignment = cuda::std::true_type;
  using propagate_on_container_move_assignment = cuda::std::true_type;
  using propagate_on_container_swap = cuda::std::true_type;
  using is_always_equal = cuda::std::true_type;

  allocator() = default;
  template <class U>
  __host__ __device__ constexpr allocator(const allocator<U> &) noexcept {}

  // NULL for n too large or an exhausted heap.
  __device__ T *allocate(size_t n) { return static_cast<T *>(allocate_bytes(n, sizeof(T), alignof(T))); }
  __device__ void deallocate(T *p, size_t) noexcept { xmcFree(p); }
};

template <class T, class U>
__host__ __device__ constexpr bool operator==(const allocator<T> &, const allocator<U> &) noexcept {
  return true;
}
template <class T, class U>
__host__ __device__ constexpr bool operator!=(const allocator<T> &, const allocator<U> &) noexcept {
  return false;
}

}  // namespace xmc
