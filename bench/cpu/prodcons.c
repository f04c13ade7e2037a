/* SPDX-License-Identifier: Apache-2.0 */
/* bench-prodcons: producer/consumer pairs, every free a cross-thread free.
 *
 * --threads N starts N pairs (2N threads). A producer allocates blocks of
 * random size, writes them and passes them through a single-producer
 * single-consumer ring to its consumer, which checks and frees them: the
 * allocator sees one thread that only allocates and one that only frees
 * memory it did not allocate. The ring is lock-free and each side publishes
 * its index once per --batch blocks.
 *
 * With the default batch of 64 and ring of 4096 the producer runs up to
 * thousands of blocks ahead: the consumer frees whole runs of them at a time,
 * long after they were allocated.  With --batch 1 (the `stream` case) each
 * block is handed over as soon as it is written and freed at once, so the
 * consumer's remote frees land on the page the producer is carving from at
 * that moment, a few blocks behind it. */
#include "bench.h"

#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define RING_MAX 4096   /* the largest --ring */

typedef struct pair_s {
  _Alignas(64) _Atomic size_t head;  /* blocks the consumer has taken */
  _Alignas(64) _Atomic size_t tail;  /* blocks the producer has put */
  _Alignas(64) void *ring[RING_MAX];
  long ops, min, max, seed, index;
  size_t batch, ring_size;           /* --batch, --ring */
  long errors;
} pair_t;

typedef struct role_s {
  pair_t *pair;
  bool    producer;
} role_t;

/* Every block carries its size in its first 4 bytes and the size's low byte in
 * its last byte, so the consumer can check it without a side channel. */
static void pair_produce(pair_t *p, uint64_t *rng, size_t at) {
  size_t size = bench_rand_range(rng, (size_t)p->min, (size_t)p->max);
  uint32_t *b = malloc(size);
  if (b == NULL) { perror("malloc"); exit(1); }
  b[0] = (uint32_t)size;
  ((unsigned char *)b)[size - 1] = (unsigned char)size;
  p->ring[at % p->ring_size] = b;
}

static void pair_consume(pair_t *p, size_t at) {
  uint32_t *b = p->ring[at % p->ring_size];
  size_t size = b[0];
  if (size < (size_t)p->min || size > (size_t)p->max || ((unsigned char *)b)[size - 1] != (unsigned char)size)
    p->errors++;
  else
    free(b);
}

/* Called while the other side has nothing for us. With more threads than
 * cores the other side may need this very core: a yield alone does not
 * reliably hand it over (the scheduler may run the yielder again for the rest
 * of its slice), so after a few yields the waiter sleeps briefly. */
static void pair_wait(unsigned *waits) {
  if (++*waits < 64) {
    sched_yield();
  } else {
    struct timespec pause = { 0, 20000 };
    nanosleep(&pause, NULL);
  }
}

static void pair_run_producer(pair_t *p) {
  uint64_t rng = bench_seed(p->seed, p->index);
  size_t head = 0;
  for (size_t tail = 0; tail < (size_t)p->ops; tail += p->batch) {
    for (unsigned waits = 0; tail + p->batch - head > p->ring_size;) {
      head = atomic_load_explicit(&p->head, memory_order_acquire);
      if (tail + p->batch - head > p->ring_size) pair_wait(&waits);
    }
    for (size_t i = 0; i < p->batch; i++) pair_produce(p, &rng, tail + i);
    atomic_store_explicit(&p->tail, tail + p->batch, memory_order_release);
  }
}

static void pair_run_consumer(pair_t *p) {
  size_t tail = 0;
  for (size_t head = 0; head < (size_t)p->ops; head += p->batch) {
    for (unsigned waits = 0; tail == head;) {
      tail = atomic_load_explicit(&p->tail, memory_order_acquire);
      if (tail == head) pair_wait(&waits);
    }
    for (size_t i = 0; i < p->batch; i++) pair_consume(p, head + i);
    atomic_store_explicit(&p->head, head + p->batch, memory_order_release);
  }
}

static void *pair_thread(void *arg) {
  role_t *r = arg;
  bench_start_wait();
  if (r->producer) pair_run_producer(r->pair);
  else pair_run_consumer(r->pair);
  return NULL;
}

int main(int argc, char **argv) {
  long threads = 1, ops = 1000000, min = 16, max = 512, seed = 1, batch = 64, ring = RING_MAX;
  bench_opt_t opts[] = {
    { "threads", &threads, "producer/consumer pairs" },
    { "ops",     &ops,     "blocks passed per pair (rounded up to a multiple of --batch)" },
    { "batch",   &batch,   "blocks a side moves per index publication (a power of two)" },
    { "ring",    &ring,    "ring slots (a power of two, from --batch to 4096)" },
    { "min",     &min,     "smallest request in bytes (>= 8)" },
    { "max",     &max,     "largest request in bytes" },
    { "seed",    &seed,    "random seed" },
  };
  bench_parse(argc, argv, "Producer/consumer pairs: blocks allocated by one thread, freed by another.",
              opts, sizeof opts / sizeof opts[0]);
  bool powers = batch > 0 && (batch & (batch - 1)) == 0 && (ring & (ring - 1)) == 0;
  if (threads < 1 || min < 8 || max < min || !powers || ring < batch || ring > RING_MAX) {
    fprintf(stderr, "bench-prodcons: bad options\n");
    return 2;
  }
  ops = (ops + batch - 1) / batch * batch;

  pair_t *pairs = aligned_alloc(64, (size_t)threads * sizeof *pairs);
  role_t *roles = calloc((size_t)threads * 2, sizeof *roles);
  for (long i = 0; i < threads; i++) {
    pair_t *p = &pairs[i];
    atomic_init(&p->head, 0);
    atomic_init(&p->tail, 0);
    p->ops = ops; p->min = min; p->max = max; p->seed = seed; p->index = i; p->errors = 0;
    p->batch = (size_t)batch; p->ring_size = (size_t)ring;
    roles[2 * i] = (role_t){ p, true };
    roles[2 * i + 1] = (role_t){ p, false };
  }
  double seconds = bench_run_threads(threads * 2, pair_thread, roles, sizeof *roles);
  long errors = 0;
  for (long i = 0; i < threads; i++) errors += pairs[i].errors;
  free(roles);
  free(pairs);
  return bench_report("prodcons", threads, ops, seconds, errors);
}
