/* SPDX-License-Identifier: Apache-2.0 */
// bench/gpu: the dynamic graph's workload and its host model (plain C++).
// Edges arrive in batches with a skewed source distribution; each adjacency
// entry is the edge's id (unique, so a deletion names exactly one entry; its
// destination would be a hash of it). A batch is grouped by source vertex,
// as GPU dynamic-graph codes sort a batch before applying it, so that one
// thread owns each vertex a batch touches. The model is the graph the device
// must hold after the inserts and after the deletes: per vertex, its sorted
// edge ids (CSR).
#pragma once
#include <algorithm>
#include <cstdint>
#include <numeric>
#include <vector>

constexpr uint32_t graph_vertices = 1u << 20;
constexpr uint32_t graph_edges = 1u << 24;
constexpr uint32_t graph_batches = 16;
constexpr uint32_t graph_batch_edges = graph_edges / graph_batches;
constexpr uint32_t graph_min_capacity = 4;   // entries of a vertex's first array

inline uint32_t graph_hash(uint32_t x) {
  x ^= x >> 16; x *= 0x7feb352dU;
  x ^= x >> 15; x *= 0x846ca68bU;
  x ^= x >> 16;
  return x;
}

// Source of edge e: u^2-skewed rank (rank r has probability ~ 1/sqrt(r N);
// the top vertex takes about 1/1024 of the edges), scattered over the ids.
inline uint32_t graph_source(uint32_t e) {
  const double u = (graph_hash(e * 2 + 1) + 0.5) / 4294967296.0;
  const uint32_t rank = std::min(uint32_t(u * u * graph_vertices), graph_vertices - 1);
  return (rank * 0x9e3779b1u) & (graph_vertices - 1);   // odd multiplier: a permutation
}

// Three edges in four are deleted again.
inline bool graph_deleted(uint32_t e) { return graph_hash(e ^ 0x5bd1e995u) % 4 != 0; }

// One batch grouped by source: vertex[i] gets the ids ids[offset[i]..offset[i+1]), sorted.
struct GraphBatch {
  std::vector<uint32_t> vertex, offset, ids;
};

// Batch b of inserts (deletes: the ones graph_deleted picks among them),
// grouped by a counting sort over the sources, so that each vertex's ids
// come out ascending.
inline GraphBatch graph_batch(uint32_t b, bool deletes) {
  const uint32_t first = b * graph_batch_edges, last = first + graph_batch_edges;
  std::vector<uint32_t> count(graph_vertices + 1, 0);
  for (uint32_t e = first; e < last; ++e)
    if (!deletes || graph_deleted(e)) ++count[graph_source(e) + 1];
  GraphBatch g;
  for (uint32_t v = 0; v < graph_vertices; ++v) {
    if (count[v + 1]) {
      g.vertex.push_back(v);
      g.offset.push_back(count[v]);
    }
    count[v + 1] += count[v];
  }
  g.offset.push_back(count[graph_vertices]);
  g.ids.resize(count[graph_vertices]);
  for (uint32_t e = first; e < last; ++e)
    if (!deletes || graph_deleted(e)) g.ids[count[graph_source(e)]++] = e;
  return g;
}

// The graph the model says the device holds: CSR of sorted ids per vertex.
struct GraphModel {
  std::vector<uint64_t> offset;   // graph_vertices + 1
  std::vector<uint32_t> ids;
};

inline GraphModel graph_model(bool after_deletes) {
  GraphModel m;
  m.offset.assign(graph_vertices + 1, 0);
  for (uint32_t e = 0; e < graph_edges; ++e)
    if (!after_deletes || !graph_deleted(e)) ++m.offset[graph_source(e) + 1];
  std::partial_sum(m.offset.begin(), m.offset.end(), m.offset.begin());
  m.ids.resize(m.offset.back());
  std::vector<uint64_t> at(m.offset.begin(), m.offset.end() - 1);
  for (uint32_t e = 0; e < graph_edges; ++e)   // ascending e: each list comes out sorted
    if (!after_deletes || !graph_deleted(e)) m.ids[at[graph_source(e)]++] = e;
  return m;
}
