/* SPDX-License-Identifier: Apache-2.0 */
// workers.h: what a test case needs to know about and say to the other
// workers, over the program's own MPI channel (sys_worker_comm()): who it
// is, plain words to a peer, and the live address intervals of every worker
// at once (for the check that no address is handed out twice).
#ifndef MMD_TEST_WORKERS_H
#define MMD_TEST_WORKERS_H

#include <manymalloc/myrmics.h>

#include <algorithm>
#include <cstdint>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

namespace mmdtest {

inline int me() { return sys_worker_id(); }
inline int nworkers() { return sys_num_workers(); }

// A tag of the tests' own messages; sys_send/sys_recv do not see them.
constexpr int kWordsTag = 7001;

inline void send_words(int peer, const std::vector<uint64_t> &w) {
  MPI_Send(w.data(), int(w.size()), MPI_UINT64_T, peer, kWordsTag, sys_worker_comm());
}

inline std::vector<uint64_t> recv_words(int peer) {
  MPI_Status st;
  MPI_Probe(peer, kWordsTag, sys_worker_comm(), &st);
  int n = 0;
  MPI_Get_count(&st, MPI_UINT64_T, &n);
  std::vector<uint64_t> w(static_cast<size_t>(n));
  MPI_Recv(w.data(), n, MPI_UINT64_T, peer, kWordsTag, sys_worker_comm(), MPI_STATUS_IGNORE);
  return w;
}

// Sends words to one peer while receiving from another: safe in a ring
// where every worker does both at once.
inline std::vector<uint64_t> shift_words(int to, int from, const std::vector<uint64_t> &w) {
  int count = int(w.size()), in = 0;
  MPI_Sendrecv(&count, 1, MPI_INT, to, kWordsTag, &in, 1, MPI_INT, from, kWordsTag, sys_worker_comm(),
               MPI_STATUS_IGNORE);
  std::vector<uint64_t> got(static_cast<size_t>(in));
  MPI_Sendrecv(w.data(), count, MPI_UINT64_T, to, kWordsTag, got.data(), in, MPI_UINT64_T, from, kWordsTag,
               sys_worker_comm(), MPI_STATUS_IGNORE);
  return got;
}

inline uint64_t word_of(const void *p) { return uint64_t(reinterpret_cast<uintptr_t>(p)); }
template <class T>
inline T *ptr_of(uint64_t w) {
  return reinterpret_cast<T *>(uintptr_t(w));
}

// Region IDs are recycled: once freed, an ID may come back from any
// worker's next sys_ralloc, and then names someone else's region. A case
// that checks what a freed ID answers does it inside a FrozenIds scope:
// every worker enters and leaves it together (sys_barrier, which also makes
// every earlier sys_rfree seen), and no worker rallocs inside it.
class FrozenIds {
 public:
  FrozenIds() { sys_barrier(); }
  ~FrozenIds() { sys_barrier(); }
  FrozenIds(const FrozenIds &) = delete;
  FrozenIds &operator=(const FrozenIds &) = delete;
};

// An address interval [begin, end) that a worker holds live.
struct Interval {
  uint64_t begin, end;
  int worker;
};

// Every worker's intervals, gathered on every worker (a collective).
inline std::vector<Interval> gather_intervals(const std::vector<std::pair<uint64_t, uint64_t>> &mine) {
  const int n = nworkers();
  std::vector<uint64_t> flat;
  for (const auto &iv : mine) {
    flat.push_back(iv.first);
    flat.push_back(iv.second);
  }
  int count = int(flat.size());
  std::vector<int> counts(static_cast<size_t>(n)), displs(static_cast<size_t>(n));
  MPI_Allgather(&count, 1, MPI_INT, counts.data(), 1, MPI_INT, sys_worker_comm());
  int total = 0;
  for (int w = 0; w < n; w++) {
    displs[size_t(w)] = total;
    total += counts[size_t(w)];
  }
  std::vector<uint64_t> all(static_cast<size_t>(total));
  MPI_Allgatherv(flat.data(), count, MPI_UINT64_T, all.data(), counts.data(), displs.data(), MPI_UINT64_T,
                 sys_worker_comm());
  std::vector<Interval> out;
  for (int w = 0; w < n; w++)
    for (int i = displs[size_t(w)]; i < displs[size_t(w)] + counts[size_t(w)]; i += 2)
      out.push_back({all[size_t(i)], all[size_t(i) + 1], w});
  return out;
}

// "" when no two intervals overlap, else the first overlapping pair.
inline std::string first_overlap(std::vector<Interval> v) {
  std::sort(v.begin(), v.end(), [](const Interval &a, const Interval &b) { return a.begin < b.begin; });
  for (size_t i = 1; i < v.size(); i++)
    if (v[i].begin < v[i - 1].end) {
      std::ostringstream s;
      s << std::hex << "[0x" << v[i - 1].begin << ", 0x" << v[i - 1].end << ") of worker " << std::dec
        << v[i - 1].worker << std::hex << " overlaps [0x" << v[i].begin << ", 0x" << v[i].end
        << ") of worker " << std::dec << v[i].worker;
      return s.str();
    }
  return "";
}

}  // namespace mmdtest

#endif  // MMD_TEST_WORKERS_H
