/* SPDX-License-Identifier: Apache-2.0 */
// tests/gpu/test_xmalloc_cxx.cu: C++ on the XMalloc heap: device new/delete
// through manymalloc/xmalloc_new.cuh (plain, array, sized through a virtual
// destructor, over-aligned, nothrow at exhaustion) with constructors and
// destructors counted, and xmc::allocator<T> through
// cuda::std::allocator_traits and a small growing container.
#include <cuda/std/memory>
#include "gpu_test.cuh"
#include "manymalloc/xmalloc_new.cuh"

namespace {

class XmcCxx : public XmcHeap {};

// Constructors and destructors that run: they count themselves and write
// and check a pattern over the whole object.
__device__ unsigned long long cx_constructed, cx_destroyed, cx_bad;

struct Tracked {
  uint32_t owner;
  uint32_t words[13];
  __device__ explicit Tracked(uint32_t who) : owner(who) {
    for (uint32_t j = 0; j < 13; ++j) words[j] = gt_hash(who * 13 + j);
    atomicAdd(&cx_constructed, 1ull);
  }
  __device__ bool intact() const {
    for (uint32_t j = 0; j < 13; ++j)
      if (words[j] != gt_hash(owner * 13 + j)) return false;
    return true;
  }
  __device__ ~Tracked() {
    if (!intact()) atomicAdd(&cx_bad, 1ull);
    atomicAdd(&cx_destroyed, 1ull);
  }
};

struct Counts {
  unsigned long long constructed, destroyed, bad;
};

void cx_reset() {
  const unsigned long long zero = 0;
  ASSERT_EQ(cudaSuccess, cudaMemcpyToSymbol(cx_constructed, &zero, sizeof zero));
  ASSERT_EQ(cudaSuccess, cudaMemcpyToSymbol(cx_destroyed, &zero, sizeof zero));
  ASSERT_EQ(cudaSuccess, cudaMemcpyToSymbol(cx_bad, &zero, sizeof zero));
}
Counts cx_counts() {
  Counts c{};
  cudaMemcpyFromSymbol(&c.constructed, cx_constructed, sizeof c.constructed);
  cudaMemcpyFromSymbol(&c.destroyed, cx_destroyed, sizeof c.destroyed);
  cudaMemcpyFromSymbol(&c.bad, cx_bad, sizeof c.bad);
  return c;
}

size_t bytes_in_use() {
  xmcStats st;
  return xmcGetStats(&st) == xmcSuccess ? st.bytes_in_use : ~size_t(0);
}

__device__ unsigned d_tid() { return blockIdx.x * blockDim.x + threadIdx.x; }

// ---- new / delete ---------------------------------------------------------

__global__ void k_new_objects(Tracked **out, size_t *usable) {
  const unsigned t = d_tid();
  Tracked *p = new Tracked(t);
  out[t] = p;
  usable[t] = xmcUsableSize(p);   // 0 unless p is a live block of our heap
}
__global__ void k_delete_objects(Tracked **ptrs, int *bad) {
  Tracked *p = ptrs[d_tid()];
  if (!p->intact()) atomicAdd(bad, 1);
  delete p;
}

TEST_F(XmcCxx, NewAndDeleteUseTheHeapAndRunConstructorsAndDestructors) {
  init(64 << 20);
  cx_reset();
  const unsigned n = 64 * 256;
  DeviceArray<Tracked *> ptrs(n);
  DeviceArray<size_t> usable(n);
  DeviceArray<int> bad(1);
  LAUNCH_OK(k_new_objects<<<64, 256>>>(ptrs.ptr, usable.ptr));
  for (size_t u : usable.host()) ASSERT_GE(u, sizeof(Tracked)) << "new did not come from the XMalloc heap";
  EXPECT_GE(bytes_in_use(), n * sizeof(Tracked));
  const std::vector<Tracked *> got = ptrs.host();
  const std::vector<void *> blocks(got.begin(), got.end());
  gt_expect_disjoint(blocks, std::vector<size_t>(n, sizeof(Tracked)));
  LAUNCH_OK(k_delete_objects<<<64, 256>>>(ptrs.ptr, bad.ptr));
  EXPECT_EQ(0, bad.host()[0]);
  const Counts c = cx_counts();
  EXPECT_EQ(n, c.constructed);
  EXPECT_EQ(n, c.destroyed);
  EXPECT_EQ(0u, c.bad);
  EXPECT_EQ(0u, bytes_in_use());
}

// Arrays of objects with destructors carry a count in front; delete[] must
// hand xmcFree the block new[] returned, not the first element.
struct Box {
  Tracked item;
  __device__ Box() : item(d_tid()) {}
};

__global__ void k_new_arrays(int *bad) {
  const unsigned count = 1 + d_tid() % 7;
  char *raw = new char[count * sizeof(Box)];   // trivial elements: no count in front
  if (xmcUsableSize(raw) < count * sizeof(Box)) atomicAdd(bad, 1);
  delete[] raw;
  Box *boxes = new Box[count];
  for (unsigned i = 0; i < count; ++i)
    if (!boxes[i].item.intact()) atomicAdd(bad, 1);
  delete[] boxes;
}

TEST_F(XmcCxx, ArrayNewAndDeleteRunEveryElement) {
  init(64 << 20);
  cx_reset();
  const unsigned n = 16 * 256;
  DeviceArray<int> bad(1);
  LAUNCH_OK(k_new_arrays<<<16, 256>>>(bad.ptr));
  EXPECT_EQ(0, bad.host()[0]);
  unsigned long long elements = 0;
  for (unsigned t = 0; t < n; ++t) elements += 1 + t % 7;
  const Counts c = cx_counts();
  EXPECT_EQ(elements, c.constructed);
  EXPECT_EQ(elements, c.destroyed);
  EXPECT_EQ(0u, c.bad);
  EXPECT_EQ(0u, bytes_in_use());
  xmcStats st;
  XMC_OK(xmcGetStats(&st));
  EXPECT_EQ(0u, st.invalid_frees);
}

// Deleting through a base with a virtual destructor calls the sized delete
// with the derived object's size.
struct Shape {
  __device__ virtual ~Shape() { atomicAdd(&cx_destroyed, 1ull); }
  __device__ virtual uint32_t area() const = 0;
};
struct Rect : Shape {
  uint32_t w, h, pad[20];
  __device__ Rect(uint32_t a, uint32_t b) : w(a), h(b) { atomicAdd(&cx_constructed, 1ull); }
  __device__ uint32_t area() const override { return w * h; }
};
struct Dot : Shape {
  __device__ Dot() { atomicAdd(&cx_constructed, 1ull); }
  __device__ uint32_t area() const override { return 0; }
};

__global__ void k_polymorphic(int *bad) {
  const unsigned t = d_tid();
  Shape *s = t % 2 ? static_cast<Shape *>(new Rect(t, 3)) : static_cast<Shape *>(new Dot);
  if (s->area() != (t % 2 ? t * 3 : 0)) atomicAdd(bad, 1);
  delete s;
}

TEST_F(XmcCxx, DeleteThroughAVirtualDestructor) {
  init(32 << 20);
  cx_reset();
  DeviceArray<int> bad(1);
  LAUNCH_OK(k_polymorphic<<<8, 256>>>(bad.ptr));
  EXPECT_EQ(0, bad.host()[0]);
  const Counts c = cx_counts();
  EXPECT_EQ(8u * 256, c.constructed);
  EXPECT_EQ(8u * 256, c.destroyed);
  EXPECT_EQ(0u, bytes_in_use());
}

struct alignas(256) Wide {
  uint64_t v[4];
};

__global__ void k_aligned_new(int *bad) {
  Wide *w = new Wide;
  Wide *ws = new Wide[3];
  if ((uintptr_t)w % 256 || (uintptr_t)ws % 256) atomicAdd(bad, 1);
  w->v[3] = d_tid();
  ws[2].v[3] = d_tid();
  if (w->v[3] != ws[2].v[3]) atomicAdd(bad, 1);
  delete w;
  delete[] ws;
}

TEST_F(XmcCxx, OverAlignedNewIsAligned) {
  init(32 << 20);
  DeviceArray<int> bad(1);
  LAUNCH_OK(k_aligned_new<<<4, 256>>>(bad.ptr));
  EXPECT_EQ(0, bad.host()[0]);
  EXPECT_EQ(0u, bytes_in_use());
  xmcStats st;
  XMC_OK(xmcGetStats(&st));
  EXPECT_EQ(0u, st.invalid_frees);
}

// Each lane of one warp takes 64 KiB objects until nothrow new says no; once
// every lane has deleted its own, the heap serves each lane again.
struct Slab {
  uint8_t bytes[64 << 10];
  Slab *next;
  __device__ explicit Slab(Slab *n) : next(n) { atomicAdd(&cx_constructed, 1ull); }
  __device__ ~Slab() { atomicAdd(&cx_destroyed, 1ull); }
};

__global__ void k_exhaust(int *nulls, int *bad) {
  Slab *head = nullptr;
  for (int k = 0; k < 4096; ++k) {
    Slab *s = new (xmc::nothrow) Slab(head);
    if (!s) {
      atomicAdd(nulls, 1);
      break;
    }
    head = s;
  }
  while (head) {
    Slab *next = head->next;
    delete head;
    head = next;
  }
  __syncwarp();
  Slab *again = new (xmc::nothrow) Slab(nullptr);
  if (!again) atomicAdd(bad, 1);
  delete again;
}

TEST_F(XmcCxx, NothrowNewReturnsNullWhenTheHeapIsFullAndRecovers) {
  init(16 << 20);
  cx_reset();
  DeviceArray<int> nulls(1), bad(1);
  LAUNCH_OK(k_exhaust<<<1, 32>>>(nulls.ptr, bad.ptr));
  EXPECT_GT(nulls.host()[0], 0) << "16 MiB cannot hold 4096 x 64 KiB per thread";
  EXPECT_EQ(0, bad.host()[0]) << "after the deletes, the heap serves again";
  const Counts c = cx_counts();
  EXPECT_EQ(c.constructed, c.destroyed);
  EXPECT_EQ(0u, bytes_in_use());
}

// ---- xmc::allocator -----------------------------------------------------

using TrackedAlloc = xmc::allocator<Tracked>;
using Traits = cuda::std::allocator_traits<TrackedAlloc>;
static_assert(cuda::std::is_same<Traits::value_type, Tracked>::value, "value_type");
static_assert(cuda::std::is_same<Traits::rebind_alloc<int>, xmc::allocator<int>>::value, "rebind");
static_assert(Traits::is_always_equal::value, "one heap per device");
static_assert(TrackedAlloc() == xmc::allocator<int>(), "allocators of any type compare equal");

__global__ void k_traits(int *bad) {
  TrackedAlloc a;
  const unsigned n = 1 + d_tid() % 9;
  Tracked *p = Traits::allocate(a, n);
  if (!p || (uintptr_t)p % alignof(Tracked)) {
    atomicAdd(bad, 1);
    return;
  }
  for (unsigned i = 0; i < n; ++i) Traits::construct(a, p + i, d_tid() + i);
  for (unsigned i = 0; i < n; ++i)
    if (!p[i].intact() || p[i].owner != d_tid() + i) atomicAdd(bad, 1);
  for (unsigned i = 0; i < n; ++i) Traits::destroy(a, p + i);
  Traits::deallocate(a, p, n);
  Traits::rebind_alloc<Wide> wide(a);
  Wide *w = Traits::rebind_traits<Wide>::allocate(wide, 2);
  if (!w || (uintptr_t)w % alignof(Wide)) atomicAdd(bad, 1);
  wide.deallocate(w, 2);
  if (a.allocate(SIZE_MAX / 2) != nullptr) atomicAdd(bad, 1);   // n * sizeof(T) overflows
}

TEST_F(XmcCxx, AllocatorThroughAllocatorTraits) {
  init(32 << 20);
  cx_reset();
  DeviceArray<int> bad(1);
  LAUNCH_OK(k_traits<<<8, 128>>>(bad.ptr));
  EXPECT_EQ(0, bad.host()[0]);
  const Counts c = cx_counts();
  EXPECT_EQ(c.constructed, c.destroyed);
  EXPECT_GT(c.constructed, 0u);
  EXPECT_EQ(0u, c.bad);
  EXPECT_EQ(0u, bytes_in_use());
}

// A minimal device container written against any allocator: it grows by
// allocate-copy-deallocate, as device containers do.
template <class T, class Alloc>
class GrowingArray {
public:
  using Traits = cuda::std::allocator_traits<Alloc>;
  __device__ ~GrowingArray() {
    for (unsigned i = 0; i < size_; ++i) Traits::destroy(alloc_, data_ + i);
    if (data_) Traits::deallocate(alloc_, data_, capacity_);
  }
  __device__ bool push_back(uint32_t who) {
    if (size_ == capacity_ && !grow()) return false;
    Traits::construct(alloc_, data_ + size_++, who);
    return true;
  }
  __device__ const T &operator[](unsigned i) const { return data_[i]; }
  __device__ unsigned size() const { return size_; }

private:
  __device__ bool grow() {
    const unsigned cap = capacity_ ? 2 * capacity_ : 2;
    T *fresh = Traits::allocate(alloc_, cap);
    if (!fresh) return false;
    for (unsigned i = 0; i < size_; ++i) {
      Traits::construct(alloc_, fresh + i, data_[i].owner);
      Traits::destroy(alloc_, data_ + i);
    }
    if (data_) Traits::deallocate(alloc_, data_, capacity_);
    data_ = fresh;
    capacity_ = cap;
    return true;
  }
  Alloc alloc_;
  T *data_ = nullptr;
  unsigned size_ = 0, capacity_ = 0;
};

__global__ void k_container(int *bad) {
  GrowingArray<Tracked, TrackedAlloc> v;
  const unsigned n = 1 + d_tid() % 40;
  for (unsigned i = 0; i < n; ++i)
    if (!v.push_back(d_tid() * 64 + i)) atomicAdd(bad, 1);
  for (unsigned i = 0; i < v.size(); ++i)
    if (v[i].owner != d_tid() * 64 + i || !v[i].intact()) atomicAdd(bad, 1);
}

TEST_F(XmcCxx, ContainerGrowsOnTheAllocator) {
  init(64 << 20);
  cx_reset();
  DeviceArray<int> bad(1);
  LAUNCH_OK(k_container<<<16, 256>>>(bad.ptr));
  EXPECT_EQ(0, bad.host()[0]);
  const Counts c = cx_counts();
  EXPECT_EQ(c.constructed, c.destroyed);
  EXPECT_EQ(0u, c.bad);
  EXPECT_EQ(0u, bytes_in_use());
  xmcStats st;
  XMC_OK(xmcGetStats(&st));
  EXPECT_EQ(0u, st.invalid_frees);
}

}  // namespace
