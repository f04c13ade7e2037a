/* SPDX-License-Identifier: Apache-2.0 */
// gpu/host.cu: the host API. One heap per device: xmcInit takes the heap
// with cudaMalloc (one region, or several of at most 16 GiB each), lays out
// the buffers and per-SM counters beside it and installs the heap header in
// the device (state and constant copy); xmcGrow adds a region between launches.
#include <algorithm>
#include <mutex>
#include <vector>
#include "heap.cuh"
#include "manymalloc/xmalloc.cuh"
#include "size_class.cuh"

namespace {

// What the host keeps per device: the installed header, for freeing and growing.
struct xmc_host_heap {
  bool live = false;
  xmc_heap header{};
  void *regions[xmc_max_regions] = {};
  void *metadata = nullptr;   // FIFOs, their slots and the counters, one allocation
};

constexpr int xmc_max_devices = 64;
constexpr size_t xmc_min_region_bytes = 64 << 10;
xmc_host_heap xmc_hosts[xmc_max_devices];
std::mutex xmc_hosts_lock;

xmcError xmc_from_cuda(cudaError_t err) {
  if (err == cudaSuccess) return xmcSuccess;
  cudaGetLastError();  // clear the sticky-free error state for the caller
  return err == cudaErrorMemoryAllocation ? xmcErrorOutOfMemory : xmcErrorCuda;
}

xmc_host_heap *xmc_host_current(xmcError *err) {
  int dev = 0;
  if ((*err = xmc_from_cuda(cudaGetDevice(&dev))) != xmcSuccess) return nullptr;
  if (dev >= xmc_max_devices) {
    *err = xmcErrorCuda;
    return nullptr;
  }
  return &xmc_hosts[dev];
}

// Cursors in use per class: as many as the class's Superblocks, one under
// each cursor, fit in an eighth of the heap (at least one), so that a small
// heap is not spread over half-used Superblocks of many cursors.
void xmc_host_size_cursors(xmc_heap &h) {
  for (int cls = 0; cls < xmc_classes; ++cls) {
    unsigned long long fit = h.total_units / (8ull * xmc_sb_units(cls));
    h.sb_cursors_in_use[cls] = (uint16_t)std::clamp<unsigned long long>(fit, 1, h.num_sb_cursors);
  }
}

// Appends regions of at most xmc_max_region_bytes until `bytes` are added.
xmcError xmc_host_add_regions(xmc_host_heap *host, size_t bytes) {
  while (bytes >= xmc_min_region_bytes) {
    size_t take = std::min<size_t>(bytes, xmc_max_region_bytes) & ~(size_t)(xmc_unit - 1);
    uint32_t n = host->header.num_regions;
    if (n == xmc_max_regions) return xmcErrorInvalidValue;
    void *base = nullptr;
    if (xmcError err = xmc_from_cuda(cudaMalloc(&base, take))) return err;
    if (xmcError err = xmc_from_cuda(cudaMemset(base, 0, take))) {  // the wilderness starts zeroed
      cudaFree(base);
      return err;
    }
    // Blocks, then the unit map (a byte per unit) and the Superblock map (a
    // word per 32 units) at the very end; a multiple of 256 units, so that
    // the unit map starts on a unit, holds whole swizzled tiles
    // (unit_map.cuh), and the Superblock map starts on 16 bytes. Each unit
    // takes 64 + 1 + 4/32 bytes: 521 per 8 units.
    xmc_region region{};
    region.base = (char *)base;
    region.units = (uint32_t)(take * 8 / (8 * (xmc_unit + 1) + 1)) & ~255u;
    region.map = (uint8_t *)base + take - xmc_region_map_bytes(region.units);
    region.free_head = xmc_nil;
    xmc_heap_add_region_kernel<<<1, 1>>>(region);
    if (xmcError err = xmc_from_cuda(cudaDeviceSynchronize())) {
      cudaFree(base);
      return err;
    }
    host->regions[n] = base;
    host->header.regions[n] = region;
    host->header.num_regions = n + 1;
    host->header.total_units += region.units;
    xmc_host_size_cursors(host->header);
    bytes -= take;
  }
  return xmcSuccess;
}

void xmc_host_release(xmc_host_heap *host) {
  xmc_heap_install(xmc_heap{});
  cudaDeviceSynchronize();
  for (void *r : host->regions) cudaFree(r);
  cudaFree(host->metadata);
  *host = xmc_host_heap{};
}

// Consecutive pieces of one device allocation: each take() places the next
// one, aligned for its type. Run once without a base to learn the size.
struct xmc_pieces {
  char *base = nullptr;
  size_t used = 0;
  template <class T> T *take(size_t count) {
    used = (used + alignof(T) - 1) & ~(alignof(T) - 1);
    T *piece = reinterpret_cast<T *>(reinterpret_cast<uintptr_t>(base) + used);
    used += count * sizeof(T);
    return piece;
  }
};

// How many of each the header's switches and counts call for.
size_t xmc_first_level_fifos(const xmc_heap &h) { return h.buffering ? (size_t)h.num_buffers * xmc_classes : 0; }
size_t xmc_second_level_fifos(const xmc_heap &h) { return h.superblocks ? (size_t)h.num_sb_buffers * xmc_classes : 0; }
size_t xmc_cursors(const xmc_heap &h) { return h.superblocks ? (size_t)h.num_sb_cursors * xmc_classes : 0; }

// Places the buffers, their slots, cursors, Superblock stacks, exchange
// slots and counters at `base`; returns the bytes they take.
size_t xmc_host_place(xmc_heap &h, char *base, uint64_t **slots) {
  const size_t nb = xmc_first_level_fifos(h), nsb = xmc_second_level_fifos(h);
  xmc_pieces p{base};
  h.buffers = p.take<xmc_fifo>(nb);
  h.sb_buffers = p.take<xmc_fifo>(nsb);
  *slots = p.take<uint64_t>(nb * xmc_fifo_capacity + nsb * xmc_sb_fifo_capacity);
  h.buffer_slots = *slots;
  h.sb_buffer_slots = *slots + nb * xmc_fifo_capacity;
  h.sb_cursor = p.take<unsigned long long>(xmc_cursors(h));
  h.sb_stacks = p.take<unsigned long long>(nsb * xmc_sb_stacks_per_sm);
  h.sb_spare = p.take<uint32_t>(xmc_cursors(h));
  h.hot = p.take<xmc_hot_row>(nb)->slot;
  h.stats = p.take<xmc_sm_stats>(xmc_stat_slots);
  return p.used;
}

// The heap's metadata in one allocation, initialised: empty FIFOs, cursors,
// stacks and exchange slots, zeroed counters.
xmcError xmc_host_layout(xmc_host_heap *host) {
  xmc_heap &h = host->header;
  uint64_t *slots = nullptr;
  char *m = nullptr;
  if (xmcError err = xmc_from_cuda(cudaMalloc(&m, xmc_host_place(h, nullptr, &slots)))) return err;
  host->metadata = m;
  xmc_host_place(h, m, &slots);
  const size_t nb = xmc_first_level_fifos(h), nsb = xmc_second_level_fifos(h);
  if (nb) xmc_fifo_init_kernel<<<64, 128>>>(h.buffers, slots, (uint32_t)nb, xmc_fifo_capacity);
  if (nsb)
    xmc_fifo_init_kernel<<<64, 128>>>(h.sb_buffers, h.sb_buffer_slots, (uint32_t)nsb,
                                      xmc_sb_fifo_capacity);
  std::vector<unsigned long long> cursors(xmc_cursors(h), xmc_cursor_empty);
  if (xmcError err = xmc_from_cuda(cudaMemcpy(h.sb_cursor, cursors.data(), cursors.size() * sizeof *h.sb_cursor,
                                              cudaMemcpyHostToDevice)))
    return err;
  // Empty stacks, spares and exchange slots: xmc_nil references (adjacent).
  if (xmcError err = xmc_from_cuda(cudaMemset(h.sb_stacks, 0xff, (char *)h.stats - (char *)h.sb_stacks))) return err;
  return xmc_from_cuda(cudaMemset(h.stats, 0, xmc_stat_slots * sizeof *h.stats));
}

}  // namespace

xmcError xmcInit(size_t heap_bytes) { return xmcInitWithConfig(heap_bytes, xmcConfig{}); }

xmcError xmcInitWithConfig(size_t heap_bytes, const xmcConfig &config) {
  std::lock_guard<std::mutex> guard(xmc_hosts_lock);
  xmcError err;
  xmc_host_heap *host = xmc_host_current(&err);
  if (!host) return err;
  if (host->live) return xmcErrorAlreadyInitialized;
  if (heap_bytes < xmc_min_region_bytes || config.buffers_per_class < 0) return xmcErrorInvalidValue;
  int dev = 0, sms = 0;
  cudaGetDevice(&dev);
  if ((err = xmc_from_cuda(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev)))) return err;

  xmc_heap &h = host->header;
  h = xmc_heap{};
  h.coalescing = config.coalescing;
  h.buffering = config.buffering;
  h.superblocks = config.superblocks;
  h.num_buffers = config.buffers_per_class ? config.buffers_per_class : 8 * sms;
  // The largest power of two of buffers per SM that the count allows.
  while ((2u << h.buffers_per_sm_log2) <= h.num_buffers / (unsigned)sms) ++h.buffers_per_sm_log2;
  h.num_sb_buffers = sms;
  h.num_sb_cursors = sms * xmc_sb_cursors_per_sm;
  host->live = true;  // from here on, failures release what was taken
  if ((err = xmc_host_layout(host))) return xmc_host_release(host), err;
  if ((err = xmc_from_cuda(xmc_heap_install(h)))) return xmc_host_release(host), err;
  if ((err = xmc_host_add_regions(host, heap_bytes))) return xmc_host_release(host), err;
  h.ready = 1;
  if ((err = xmc_from_cuda(xmc_heap_install(h)))) return xmc_host_release(host), err;
  if ((err = xmc_from_cuda(cudaDeviceSynchronize()))) return xmc_host_release(host), err;
  return xmcSuccess;
}

xmcError xmcShutdown() {
  std::lock_guard<std::mutex> guard(xmc_hosts_lock);
  xmcError err;
  xmc_host_heap *host = xmc_host_current(&err);
  if (!host) return err;
  if (!host->live) return xmcErrorNotInitialized;
  xmc_host_release(host);
  return xmc_from_cuda(cudaGetLastError());
}

xmcError xmcGrow(size_t extra_bytes) {
  std::lock_guard<std::mutex> guard(xmc_hosts_lock);
  xmcError err;
  xmc_host_heap *host = xmc_host_current(&err);
  if (!host) return err;
  if (!host->live) return xmcErrorNotInitialized;
  if (extra_bytes < xmc_min_region_bytes) return xmcErrorInvalidValue;
  if ((err = xmc_from_cuda(cudaDeviceSynchronize()))) return err;
  err = xmc_host_add_regions(host, extra_bytes);
  if (xmcError published = xmc_from_cuda(xmc_heap_publish(host->header))) return published;
  return err;
}

xmcError xmcGetStats(xmcStats *out) {
  if (!out) return xmcErrorInvalidValue;
  std::lock_guard<std::mutex> guard(xmc_hosts_lock);
  xmcError err;
  xmc_host_heap *host = xmc_host_current(&err);
  if (!host) return err;
  if (!host->live) return xmcErrorNotInitialized;
  xmc_heap *dh = nullptr;
  if ((err = xmc_from_cuda(cudaMalloc(&dh, sizeof(xmc_heap))))) return err;
  xmc_heap_read_kernel<<<1, 1>>>(dh);
  xmc_heap h;
  static xmc_sm_stats per_sm[xmc_stat_slots];
  err = xmc_from_cuda(cudaMemcpy(&h, dh, sizeof h, cudaMemcpyDeviceToHost));
  cudaFree(dh);
  if (!err) err = xmc_from_cuda(cudaMemcpy(per_sm, h.stats, sizeof per_sm, cudaMemcpyDeviceToHost));
  if (err) return err;

  *out = xmcStats{};
  unsigned long long held = 0;
  for (uint32_t i = 0; i < h.num_regions; ++i) {
    const xmc_region &r = h.regions[i];
    out->heap_bytes += (size_t)(r.map + xmc_region_map_bytes(r.units) - (uint8_t *)r.base);  // the maps included
    held += xmc_region_held(r.top, r.units, r.free_units);
  }
  out->bytes_free = ((size_t)h.total_units - held) << xmc_unit_shift;
  out->bytes_in_use_peak = (size_t)std::max(held, h.peak_units) << xmc_unit_shift;
  out->num_classes = xmc_classes;
  unsigned long long large_units = 0;
  for (const xmc_sm_stats &s : per_sm) {
    for (int c = 0; c < xmc_classes; ++c) {
      out->class_allocs[c] += s.allocs[c];
      out->class_frees[c] += s.frees[c];
    }
    out->large_allocs += s.large_allocs;
    large_units += s.large_units - s.large_units_freed;
    out->failed_allocs += s.failed;
    out->invalid_frees += s.invalid;
  }
  out->bytes_in_use = (size_t)large_units << xmc_unit_shift;
  for (int c = 0; c < xmc_classes; ++c) {
    out->class_size[c] = xmc_class_body(c);
    out->bytes_in_use += (size_t)(out->class_allocs[c] - out->class_frees[c]) * xmc_class_body(c);
  }
  return xmcSuccess;
}

const char *xmcGetErrorString(xmcError err) {
  switch (err) {
  case xmcSuccess: return "no error";
  case xmcErrorInvalidValue: return "invalid value";
  case xmcErrorNotInitialized: return "no XMalloc heap on this device";
  case xmcErrorAlreadyInitialized: return "XMalloc heap already initialized on this device";
  case xmcErrorOutOfMemory: return "out of device memory for the heap";
  case xmcErrorCuda: return "CUDA runtime error";
  }
  return "unknown error";
}
