/* SPDX-License-Identifier: Apache-2.0 */
// bench/gpu: the dynamic-graph benchmark. 2^20 vertices, each with an
// adjacency array on the heap; 2^24 edges inserted in 16 batches, the
// arrays grown by allocate-copy-free, then three edges in four deleted in
// 16 batches, the arrays shrunk likewise and freed when empty. The graph is
// read back and checked against the host model (bench_graph_model.h) after
// each phase of the first run. Reports insert and delete throughput and the
// heap memory held.
#pragma once
#include <vector>
#include "bench_graph_model.h"
#include "bench_cases.cuh"

struct BenchVertex {
  uint32_t *adj;
  uint32_t size, cap;
};

// A batch on the device, as graph_batch laid it out.
struct BenchGraphBatch {
  uint32_t *vertex, *offset, *ids;
  uint32_t count;   // vertices the batch touches
};

__device__ __forceinline__ uint32_t bench_graph_grown(uint32_t size) {
  uint32_t c = graph_min_capacity;
  while (c < size) c *= 2;
  return c;
}

// Moves a vertex's entries to an array of `cap` (0: none); false when the
// heap said no (the vertex keeps its old array).
template <class Heap>
__device__ bool bench_graph_move(BenchVertex &x, uint32_t cap) {
  uint32_t *fresh = nullptr;
  if (cap && !(fresh = static_cast<uint32_t *>(Heap::alloc(cap * sizeof(uint32_t))))) return false;
  for (uint32_t i = 0; i < x.size; ++i) fresh[i] = x.adj[i];
  if (x.adj) Heap::release(x.adj);
  x.adj = fresh;
  x.cap = cap;
  return true;
}

// One thread per vertex of the batch appends its edges, growing first.
template <class Heap>
__global__ void bench_graph_insert_kernel(BenchVertex *graph, BenchGraphBatch b, BenchCounters *counters) {
  const unsigned i = bench_tid();
  if (i >= b.count) return;
  BenchVertex &x = graph[b.vertex[i]];
  const uint32_t begin = b.offset[i], n = b.offset[i + 1] - begin;
  if (x.size + n > x.cap && !bench_graph_move<Heap>(x, bench_graph_grown(x.size + n))) {
    bench_count(&counters->nulls);
    return;
  }
  for (uint32_t k = 0; k < n; ++k) x.adj[x.size + k] = b.ids[begin + k];
  x.size += n;
}

// One thread per vertex of the batch drops its entries named in the batch
// (sorted: a binary search each) and shrinks the array when at most a
// quarter full.
template <class Heap>
__global__ void bench_graph_delete_kernel(BenchVertex *graph, BenchGraphBatch b, BenchCounters *counters) {
  const unsigned i = bench_tid();
  if (i >= b.count) return;
  BenchVertex &x = graph[b.vertex[i]];
  const uint32_t *gone = b.ids + b.offset[i];
  const uint32_t n = b.offset[i + 1] - b.offset[i];
  uint32_t kept = 0;
  for (uint32_t k = 0; k < x.size; ++k) {
    const uint32_t id = x.adj[k];
    uint32_t lo = 0, hi = n;
    while (lo < hi) {
      const uint32_t mid = (lo + hi) / 2;
      if (gone[mid] < id) lo = mid + 1; else hi = mid;
    }
    if (lo == n || gone[lo] != id) x.adj[kept++] = id;
  }
  if (x.size - kept != n) bench_count(&counters->bad);   // an id the vertex did not hold
  x.size = kept;
  const uint32_t cap = kept == 0 ? 0 : kept * 4 <= x.cap ? max(graph_min_capacity, kept * 2) : x.cap;
  if (cap != x.cap && !bench_graph_move<Heap>(x, cap)) bench_count(&counters->nulls);
}

// Reads the graph back into CSR at the model's offsets (a size that differs
// is counted, its entries not copied); the bytes of the arrays held go to
// counters->bytes.
__global__ void bench_graph_dump_kernel(const BenchVertex *graph, const uint64_t *offset, uint32_t *out,
                                        BenchCounters *counters) {
  const unsigned v = bench_tid();
  if (v >= graph_vertices) return;
  const BenchVertex x = graph[v];
  atomicAdd(&counters->bytes, (unsigned long long)x.cap * sizeof(uint32_t));
  if (x.size != offset[v + 1] - offset[v]) {
    bench_count(&counters->bad);
    return;
  }
  for (uint32_t k = 0; k < x.size; ++k) out[offset[v] + k] = x.adj[k];
}

template <class Heap>
__global__ void bench_graph_free_kernel(BenchVertex *graph) {
  const unsigned v = bench_tid();
  if (v >= graph_vertices) return;
  if (graph[v].adj) Heap::release(graph[v].adj);
  graph[v] = BenchVertex{};
}

// ---- the host side ---------------------------------------------------------

// The batches of one phase, uploaded once and replayed by every repetition.
class BenchGraphPhase {
public:
  explicit BenchGraphPhase(bool deletes) {
    for (uint32_t b = 0; b < graph_batches; ++b) {
      const GraphBatch g = graph_batch(b, deletes);
      BenchGraphBatch d{upload(g.vertex), upload(g.offset), upload(g.ids), uint32_t(g.vertex.size())};
      batches_.push_back(d);
      edges_ += g.ids.size();
    }
  }
  ~BenchGraphPhase() {
    for (void *p : owned_) cudaFree(p);
  }
  // Applies every batch; returns the kernels' time in ms.
  template <class Heap>
  float apply(BenchRun<Heap> &run, BenchVertex *graph, bool deletes) {
    run.timer.start();
    for (const BenchGraphBatch &b : batches_) {
      if (deletes) bench_graph_delete_kernel<Heap><<<bench_grid(b.count), bench_block>>>(graph, b, run.counters());
      else bench_graph_insert_kernel<Heap><<<bench_grid(b.count), bench_block>>>(graph, b, run.counters());
    }
    return run.timer.stop_ms();
  }
  size_t edges() const { return edges_; }

private:
  uint32_t *upload(const std::vector<uint32_t> &v) {
    uint32_t *d = nullptr;
    BENCH_CUDA(cudaMalloc(&d, v.size() * sizeof(uint32_t)));
    BENCH_CUDA(cudaMemcpy(d, v.data(), v.size() * sizeof(uint32_t), cudaMemcpyHostToDevice));
    owned_.push_back(d);
    return d;
  }
  std::vector<BenchGraphBatch> batches_;
  std::vector<void *> owned_;
  size_t edges_ = 0;
};

// Reads the device's graph back and compares it with the model; mismatching
// vertices (size or entries) are added to counters->bad. Returns the bytes
// of the arrays the vertices hold.
template <class Heap>
unsigned long long bench_graph_check(BenchRun<Heap> &run, BenchVertex *graph, const GraphModel &m) {
  uint64_t *offset = nullptr;
  uint32_t *out = nullptr;
  BENCH_CUDA(cudaMalloc(&offset, m.offset.size() * sizeof(uint64_t)));
  BENCH_CUDA(cudaMalloc(&out, m.ids.size() * sizeof(uint32_t) + 4));
  BENCH_CUDA(cudaMemcpy(offset, m.offset.data(), m.offset.size() * sizeof(uint64_t), cudaMemcpyHostToDevice));
  BenchCounters before, after;
  BENCH_CUDA(cudaMemcpy(&before, run.counters(), sizeof before, cudaMemcpyDeviceToHost));
  bench_graph_dump_kernel<<<bench_grid(graph_vertices), bench_block>>>(graph, offset, out, run.counters());
  BENCH_CUDA(cudaGetLastError());
  std::vector<uint32_t> ids(m.ids.size());
  BENCH_CUDA(cudaMemcpy(ids.data(), out, ids.size() * sizeof(uint32_t), cudaMemcpyDeviceToHost));
  BENCH_CUDA(cudaMemcpy(&after, run.counters(), sizeof after, cudaMemcpyDeviceToHost));
  cudaFree(offset);
  cudaFree(out);
  unsigned long long wrong = 0;
  for (uint32_t v = 0; v < graph_vertices; ++v) {
    auto first = ids.begin() + m.offset[v], last = ids.begin() + m.offset[v + 1];
    std::sort(first, last);
    wrong += !std::equal(first, last, m.ids.begin() + m.offset[v]);
  }
  if (wrong) {
    after.bad += wrong;
    BENCH_CUDA(cudaMemcpy(run.counters(), &after, sizeof after, cudaMemcpyHostToDevice));
  }
  return after.bytes - before.bytes;
}

// The heap's own count of bytes held, where the policy has one.
template <class Heap>
double bench_graph_held_mib() {
  size_t bytes = 0;
  return Heap::held_bytes(&bytes) ? bytes / 1048576.0 : -1;
}

template <class Heap>
void bench_case_graph(BenchRun<Heap> &run) {
  BenchGraphPhase inserts(false), deletes(true);
  const GraphModel full = graph_model(false), thinned = graph_model(true);
  BenchVertex *graph = nullptr;
  BENCH_CUDA(cudaMalloc(&graph, graph_vertices * sizeof(BenchVertex)));
  std::vector<double> insert_rate, delete_rate, held_full, held_thinned;
  double arrays_full = 0, arrays_thinned = 0;
  for (int rep = 0; run.reps.next(rep); ++rep) {
    run.begin_rep();
    BENCH_CUDA(cudaMemset(graph, 0, graph_vertices * sizeof(BenchVertex)));
    const bool check = BenchRepetitions::warmup(rep);
    const float insert_ms = inserts.apply(run, graph, false);
    held_full.push_back(bench_graph_held_mib<Heap>());
    if (check) arrays_full = bench_graph_check(run, graph, full) / 1048576.0;
    const float delete_ms = deletes.apply(run, graph, true);
    held_thinned.push_back(bench_graph_held_mib<Heap>());
    if (check) arrays_thinned = bench_graph_check(run, graph, thinned) / 1048576.0;
    bench_graph_free_kernel<Heap><<<bench_grid(graph_vertices), bench_block>>>(graph);
    run.end_rep();
    if (check) continue;
    insert_rate.push_back(inserts.edges() / (insert_ms * 1e3));
    delete_rate.push_back(deletes.edges() / (delete_ms * 1e3));
  }
  cudaFree(graph);
  run.emit("insert_medges", insert_rate, "M/s");
  run.emit("delete_medges", delete_rate, "M/s");
  run.emit("arrays_mib_inserted", {arrays_full}, "MiB", 1);
  run.emit("arrays_mib_deleted", {arrays_thinned}, "MiB", 1);
  if (held_full.back() >= 0) {
    run.emit("held_mib_inserted", held_full, "MiB", int(held_full.size()));
    run.emit("held_mib_deleted", held_thinned, "MiB", int(held_thinned.size()));
  }
}
