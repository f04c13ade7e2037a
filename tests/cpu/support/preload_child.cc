/* SPDX-License-Identifier: Apache-2.0 */
// The program that test_preload runs with and without LD_PRELOAD: C++
// container churn, new/delete and malloc/free from threads (with frees across
// threads), ending in a checksum that must not depend on the allocator. It
// is linked to no allocator of ours; it reports on stderr who served its
// malloc: the object that defines it, and whether mm_stats_get (found with
// dlsym) saw its allocations.
#include <dlfcn.h>
#include <manymalloc/manymalloc.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

namespace {

uint64_t mix(uint64_t h, uint64_t v) { return (h ^ v) * 0x100000001B3ull; }

uint64_t container_churn(uint32_t seed) {
  std::mt19937 rng(seed);
  std::map<std::string, std::vector<int>> map;
  uint64_t h = seed;
  for (int i = 0; i < 20000; i++) {
    std::string key = "key-" + std::to_string(rng() % 3000) + std::string(rng() % 40, 'x');
    std::vector<int> &v = map[key];
    v.resize(rng() % 64, i);
    auto owned = std::make_unique<std::string>(key + key);
    h = mix(h, owned->size() + v.size());
    if (rng() % 3 == 0) map.erase(map.begin());  // may be v's entry
  }
  for (const auto &[key, v] : map) h = mix(h, key.size() * 31 + v.size());
  return h;
}

// Threads allocate blocks into one generation and free the previous
// generation's blocks of their neighbour, so most frees are remote.
uint64_t malloc_across_threads() {
  constexpr int kThreads = 4, kBlocks = 2000, kRounds = 6;
  std::vector<char *> made[2][kThreads];
  uint64_t sums[kThreads] = {};
  for (int round = 0; round < kRounds; round++) {
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; t++)
      threads.emplace_back([&, t] {
        std::vector<char *> &theirs = made[round % 2][(t + 1) % kThreads];
        for (char *p : theirs) {
          sums[t] = mix(sums[t], uint8_t(p[0]));
          free(p);
        }
        theirs.clear();
        for (int i = 0; i < kBlocks; i++) {
          const size_t size = 1 + size_t(i * 7 + round) % (i % 50 == 0 ? 300000 : 700);
          char *p = static_cast<char *>(malloc(size));
          memset(p, (i + t + round) & 0xff, size);
          made[(round + 1) % 2][t].push_back(p);
        }
      });
    for (std::thread &th : threads) th.join();
  }
  uint64_t h = 0;
  for (auto &generation : made)
    for (auto &blocks : generation)
      for (char *p : blocks) free(p);
  for (uint64_t s : sums) h = mix(h, s);
  return h;
}

// Who serves malloc: the defining object, and whether manymalloc's own
// counters moved when this program allocated.
void report_allocator() {
  Dl_info info{};
  void *malloc_sym = dlsym(RTLD_DEFAULT, "malloc");
  const char *object = malloc_sym && dladdr(malloc_sym, &info) ? info.dli_fname : "unknown";
  auto stats_get = reinterpret_cast<void (*)(mm_stats_t *)>(dlsym(RTLD_DEFAULT, "mm_stats_get"));
  bool counted = false;
  if (stats_get != nullptr) {
    mm_stats_t before, after;
    stats_get(&before);
    // volatile: the compiler may otherwise drop a malloc whose block is unused.
    void *volatile p = malloc(8 << 20);
    stats_get(&after);
    free(p);
    counted = after.bytes_in_use >= before.bytes_in_use + (8 << 20);
  }
  fprintf(stderr, "malloc from: %s\nmm_stats_get counted malloc: %s\n", object,
          counted ? "yes" : "no");
}

}  // namespace

int main() {
  std::vector<std::thread> threads;
  std::vector<uint64_t> sums(4);
  for (uint32_t t = 0; t < 4; t++)
    threads.emplace_back([&sums, t] { sums[t] = container_churn(t); });
  for (std::thread &th : threads) th.join();
  uint64_t h = malloc_across_threads();
  for (uint64_t s : sums) h = mix(h, s);
  printf("checksum %016llx\n", static_cast<unsigned long long>(h));
  report_allocator();
  return 0;
}
