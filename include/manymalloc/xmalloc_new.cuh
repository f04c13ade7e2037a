/* SPDX-License-Identifier: Apache-2.0 */
// manymalloc gpu/: device operator new and delete on the XMalloc heap, opt in.
//
// A translation unit that includes this header gets xmcMalloc/xmcFree for
// every `new` / `delete` its device code writes: plain, array, sized and
// over-aligned forms, and `new (xmc::nothrow) T`, which checks for NULL.
// Host code keeps the host's operators.
//
//   #include <manymalloc/xmalloc_new.cuh>
//   __global__ void k() {
//     Node *n = new (xmc::nothrow) Node(1);   // NULL when the heap is full
//     delete n;                               // destructor, then xmcFree
//   }
//
// CUDA treats device new/delete as built-ins that call its own malloc, and
// only a definition seen in the same translation unit replaces them; so the
// replacements are defined here, inline (a nonstandard form nvcc accepts and
// merges at device link), and every translation unit whose kernels allocate
// or free objects across each other must include this header. A block from
// CUDA's malloc handed to our delete is refused as an invalid free (counted
// in xmcStats::invalid_frees) and leaks; it never corrupts the heap.
//
// Exhaustion: device code has no exceptions. The plain forms return NULL and
// the compiler constructs the object there anyway (a fault), as with CUDA's
// own new; write `new (xmc::nothrow) T` wherever the heap may run out: that
// form checks and skips the constructor. (std::nothrow is a host object;
// its forms of new stay the host's.)
#pragma once
#include <new>
#include "manymalloc/xmalloc.cuh"
#include "manymalloc/xmalloc_allocator.cuh"

// Defined in the device pass only: nvcc would otherwise take these for the
// host's replacements too (the built-ins are declared __host__ __device__).
#ifdef __CUDA_ARCH__
#pragma nv_diag_suppress 2620   // "declaring a new or delete operator inline is nonstandard"

__device__ inline void *operator new(size_t n) { return xmcMalloc(n); }
__device__ inline void *operator new[](size_t n) { return xmcMalloc(n); }
__device__ inline void *operator new(size_t n, std::align_val_t a) {
  return xmc::allocate_bytes(1, n, (size_t)a);
}
__device__ inline void *operator new[](size_t n, std::align_val_t a) {
  return xmc::allocate_bytes(1, n, (size_t)a);
}

// xmcFree finds a block's size and alignment on its own: every delete is one.
__device__ inline void operator delete(void *p) noexcept { xmcFree(p); }
__device__ inline void operator delete[](void *p) noexcept { xmcFree(p); }
__device__ inline void operator delete(void *p, size_t) noexcept { xmcFree(p); }
__device__ inline void operator delete[](void *p, size_t) noexcept { xmcFree(p); }
__device__ inline void operator delete(void *p, std::align_val_t) noexcept { xmcFree(p); }
__device__ inline void operator delete[](void *p, std::align_val_t) noexcept { xmcFree(p); }
__device__ inline void operator delete(void *p, size_t, std::align_val_t) noexcept { xmcFree(p); }
__device__ inline void operator delete[](void *p, size_t, std::align_val_t) noexcept { xmcFree(p); }

#pragma nv_diag_default 2620
#endif  // __CUDA_ARCH__

// `new (xmc::nothrow) T`: a noexcept operator new, so the compiler checks
// its result before constructing. The matching deletes are what C++ pairs
// with a placement new; `delete p` is the plain one above.
namespace xmc {
struct nothrow_t {
  explicit nothrow_t() = default;
};
constexpr nothrow_t nothrow{};
}  // namespace xmc

__device__ inline void *operator new(size_t n, xmc::nothrow_t) noexcept { return xmcMalloc(n); }
__device__ inline void *operator new[](size_t n, xmc::nothrow_t) noexcept { return xmcMalloc(n); }
__device__ inline void *operator new(size_t n, std::align_val_t a, xmc::nothrow_t) noexcept {
  return xmc::allocate_bytes(1, n, (size_t)a);
}
__device__ inline void *operator new[](size_t n, std::align_val_t a, xmc::nothrow_t) noexcept {
  return xmc::allocate_bytes(1, n, (size_t)a);
}
__device__ inline void operator delete(void *p, xmc::nothrow_t) noexcept { xmcFree(p); }
__device__ inline void operator delete[](void *p, xmc::nothrow_t) noexcept { xmcFree(p); }
