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
    // Blocks, then the unit map (a byte per unit) at the very end; a
    // multiple of 64 units, so that the map starts on a unit too.
    xmc_region region{};
    region.base = (char *)base;
    region.units = (uint32_t)(take / (xmc_unit + 1)) & ~(xmc_unit - 1);
    region.map = (uint8_t *)base + take - region.units;
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

// Buffers, exchange slots, cursors, Superblock stacks and counters in one allocation; sets the
// header's pointers into it.
xmcError xmc_host_layout(xmc_host_heap *host) {
  xmc_heap &h = host->header;
  const size_t nb = h.buffering ? (size_t)h.num_buffers * xmc_classes : 0;
  const size_t nsb = h.superblocks ? (size_t)h.num_sb_buffers * xmc_classes : 0;
  const size_t fifo_bytes = (nb + nsb) * sizeof(xmc_fifo);
  const size_t slot_bytes = (nb * xmc_fifo_capacity + nsb * xmc_sb_fifo_capacity) * sizeof(uint64_t);
  const size_t ncursors = h.superblocks ? (size_t)h.num_sb_cursors * xmc_classes : 0;
  const size_t cursor_bytes = ncursors * sizeof(unsigned long long);
  const size_t stack_bytes = nsb * xmc_sb_stacks_per_sm * sizeof(unsigned long long);
  const size_t hot_bytes = nb * xmc_hot_slots * sizeof(uint32_t);
  const size_t stat_bytes = xmc_stat_slots * sizeof(xmc_sm_stats);
  char *m = nullptr;
  if (xmcError err = xmc_from_cuda(cudaMalloc(&m, fifo_bytes + slot_bytes + cursor_bytes + stack_bytes + hot_bytes + stat_bytes)))
    return err;
  host->metadata = m;
  h.buffers = (xmc_fifo *)m;
  h.sb_buffers = h.buffers + nb;
  uint64_t *slots = (uint64_t *)(m + fifo_bytes);
  h.sb_cursor = (unsigned long long *)(m + fifo_bytes + slot_bytes);
  h.sb_stacks = (unsigned long long *)(m + fifo_bytes + slot_bytes + cursor_bytes);
  h.hot = (uint32_t *)(m + fifo_bytes + slot_bytes + cursor_bytes + stack_bytes);
  h.stats = (xmc_sm_stats *)(m + fifo_bytes + slot_bytes + cursor_bytes + stack_bytes + hot_bytes);
  if (nb) xmc_fifo_init_kernel<<<64, 128>>>(h.buffers, slots, (uint32_t)nb, xmc_fifo_capacity);
  if (nsb)
    xmc_fifo_init_kernel<<<64, 128>>>(h.sb_buffers, slots + nb * xmc_fifo_capacity, (uint32_t)nsb,
                                      xmc_sb_fifo_capacity);
  std::vector<unsigned long long> cursors(ncursors, xmc_cursor_empty);
  if (xmcError err = xmc_from_cuda(cudaMemcpy(h.sb_cursor, cursors.data(), cursor_bytes, cudaMemcpyHostToDevice)))
    return err;
  // Empty exchange slots and stacks: xmc_nil references.
  if (xmcError err = xmc_from_cuda(cudaMemset(h.sb_stacks, 0xff, stack_bytes + hot_bytes))) return err;
  return xmc_from_cuda(cudaMemset(h.stats, 0, stat_bytes));
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
    out->heap_bytes += (size_t)(r.map + r.units - (uint8_t *)r.base);  // the unit map included
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
