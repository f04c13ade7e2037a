/* The program that test_purge runs: how much of the memory of freed blocks
 * stays resident under the MANYMALLOC_PURGE_DELAY of its environment (read
 * when the allocator starts, hence a process of its own).
 * It allocates and writes 24 MiB in blocks of 512 KiB (spans, about seven
 * span segments), frees them all, and prints the KiB of those blocks that
 * are resident (mincore) three times, one line: right after the frees;
 * after sleeping 200 ms and one more malloc (a slow path, where memory
 * whose delay is over goes back); after mm_collect. */
#define _DEFAULT_SOURCE
#include <manymalloc/manymalloc.h>

#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#define BLOCK_SIZE ((size_t)512 * 1024)
#define BLOCKS     48

static size_t resident_kib(void *const *blocks) {
  const size_t page = (size_t)sysconf(_SC_PAGESIZE);
  unsigned char pages[BLOCK_SIZE / 4096];
  size_t kib = 0;
  for (int i = 0; i < BLOCKS; i++) {
    if (mincore(blocks[i], BLOCK_SIZE, pages) != 0) continue; /* unmapped: not resident */
    for (size_t j = 0; j < BLOCK_SIZE / page; j++) kib += (pages[j] & 1) ? page / 1024 : 0;
  }
  return kib;
}

int main(void) {
  void *blocks[BLOCKS];
  for (int i = 0; i < BLOCKS; i++) {
    blocks[i] = mm_malloc(BLOCK_SIZE);
    if (blocks[i] == NULL) return 2;
    memset(blocks[i], 0x5a, BLOCK_SIZE);
  }
  for (int i = 0; i < BLOCKS; i++) mm_free(blocks[i]);
  size_t after_free = resident_kib(blocks);
  nanosleep(&(struct timespec){.tv_nsec = 200 * 1000 * 1000}, NULL);
  mm_free(mm_malloc(64 * 1024));
  size_t after_delay = resident_kib(blocks);
  mm_collect();
  size_t after_collect = resident_kib(blocks);
  printf("%zu %zu %zu\n", after_free, after_delay, after_collect);
  return 0;
}
