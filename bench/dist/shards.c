/* SPDX-License-Identifier: Apache-2.0 */
/* dist-shards: migrating shards of a pointer-based index (issue #32, "our own,
 * beyond the paper"): a region per shard sent whole with sys_send, against
 * hand-written MPI pack / send / rebuild, in the same invocation.
 *
 * The index is a B+-tree (fan-out 31, 512 B nodes) of 64-bit keys whose
 * values are separate objects of --value-min..--value-max bytes (multiples
 * of 8). --keys keys in all are range-partitioned into W x --shards shards,
 * --shards a worker. Each worker inserts its keys in one random order over
 * all its shards (so its shards' memory interleaves, as an index fed by a
 * stream of inserts does), then replaces --updates percent of the values
 * with new ones of another length (freeing the old: holes in the slabs).
 *
 * Rebalancing: workers are paired, 2i sends --move of its shards to 2i+1
 * (with an odd W the last worker only serves its own), one shard at a time.
 *   dist  the shard is a region (sys_ralloc) holding its header, nodes and
 *         values (sys_alloc); the sender calls sys_send(region + header),
 *         the receiver sys_recv and looks up in it at once, pointers intact.
 *   pack  the same tree in malloc memory; the sender walks its leaves and
 *         packs keys, value lengths and value bytes into one buffer, sends
 *         it with MPI_Send on sys_worker_comm(); the receiver probes,
 *         receives, and rebuilds the tree with malloc (a value a malloc, then
 *         a bottom-up bulk load of full leaves and inner nodes).
 * Each repetition runs both variants (their order alternating) from the
 * same keys. Timed from an MPI_Barrier of the workers, on each worker's own
 * clock:
 *   first     a receiver's time to its first correct lookup: the first shard
 *             in place and one key looked up and its value checked in full;
 *   migrate   the last worker's time to finish: every sender's last send,
 *             every receiver's last shard received (and rebuilt);
 *   lookups/s random lookups (1 in 8 of a key that is absent) on the
 *             migrated shards, summed over the receivers; the same on the
 *             sender just before it moved them ("before").
 * Untimed, after the migration every key of every migrated shard (and of
 * every shard a worker kept) is looked up and its value compared in full, the leaf chain walked (count, order)
 * and absent keys looked up; in the lookups/s phase every result is checked
 * (found or not as it should be; key, length, version and last word). Any
 * wrong result aborts the run. Bytes: the dist sender's sys_region_stats of
 * each moved shard (transfer_bytes, live_bytes, transfer_ranges) and the
 * pack messages' sizes, against the payload (8 B a key plus the values).
 * Where the time goes: the dist sender's waits for PACK replies and the
 * receiver's for the resident checks inside sys_recv (worker_wait_ns of
 * sys_sched_stats), the pack sender's packing, each receiver's time in
 * sys_recv or MPI_Probe + MPI_Recv, the pack receiver's rebuilding; and what
 * a first touch of a fresh page costs on this host (a dist receiver touches
 * every page of a shard it receives for the first time).
 *
 * Appends one JSON line to --out/shards.jsonl and prints a table. --trace 1
 * prints a line for each shard sent or received (ms, page faults, context
 * switches, the receiver's scheduler calls); --settle-ms pauses before each
 * timed migration.
 *
 *   mpirun -np S+W ./dist-shards [--out DIR] [--keys N] [--shards S]
 *          [--move K] [--reps R] [--lookups L] [--value-min B]
 *          [--value-max B] [--updates PCT] [--seed X] [--trace 0|1]
 *          [--settle-ms MS]
 */
#define _GNU_SOURCE
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>

#include "manymalloc/myrmics.h"
#include "out.h"
#include "timing.h"

/* ---------------------------------------------------------------------------
 * Options and the small things
 * ------------------------------------------------------------------------- */

typedef struct sh_opts {
  const char *out;
  long keys;            /* in all */
  int shards;           /* a worker */
  int move;             /* shards a sender moves */
  int reps;
  long lookups;         /* a receiver, in the lookups/s phase */
  int vmin, vmax;       /* value bytes, multiples of 8 */
  int updates;          /* percent of the values replaced after the build */
  uint64_t seed;
  int trace;            /* 1: a line on stderr for each shard moved */
  int settle_ms;        /* a pause before each timed migration */
} sh_opts_t;

static int sh_me, sh_workers;
static sh_opts_t sh_o;

#define SH_TAG 3201

static void sh_die(const char *what) {
  int code = sys_last_error();
  fprintf(stderr, "dist-shards: worker %d: %s failed%s%s\n", sh_me, what, code ? ": " : "",
          code ? sys_strerror(code) : "");
  MPI_Abort(MPI_COMM_WORLD, 1);
  exit(1);
}

static void sh_wrong(const char *variant, int shard, uint64_t key, const char *what) {
  fprintf(stderr, "dist-shards: worker %d, %s: shard %d, key %016llx: %s\n", sh_me, variant, shard,
          (unsigned long long)key, what);
  MPI_Abort(MPI_COMM_WORLD, 1);
  exit(1);
}

static inline uint64_t sh_mix(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

/* The j-th key: a bijection of j, so the keys are distinct. */
static inline uint64_t sh_key(long j) { return sh_mix((uint64_t)j * 0x9e3779b97f4a7c15ull + sh_o.seed); }

/* The shard of a key: ranges of equal width over the 64-bit keys. */
static inline int sh_shard_of(uint64_t key, int nshards) {
  return (int)(((unsigned __int128)key * (unsigned)nshards) >> 64);
}

/* ---------------------------------------------------------------------------
 * Values: each one's bytes a function of its key alone. Word 0 is the key,
 * word 1 the length and version (1 when the value was replaced by an
 * update), the rest a stream from both.
 * ------------------------------------------------------------------------- */

static inline int sh_updated(uint64_t key) { return sh_mix(key ^ 0x5bd1e9955bd1e995ull) % 100 < (uint64_t)sh_o.updates; }

static inline uint32_t sh_len(uint64_t key, int ver) {
  uint32_t steps = (uint32_t)(sh_o.vmax - sh_o.vmin) / 8 + 1;
  return (uint32_t)sh_o.vmin + 8 * (uint32_t)(sh_mix(key + 0x632be59bd9b4e019ull * (uint64_t)(ver + 1)) % steps);
}

static inline uint64_t sh_word(uint64_t key, int ver, uint32_t i) {
  return sh_mix(key ^ ((uint64_t)i << 48) ^ ((uint64_t)ver << 40) ^ 0x2545f4914f6cdd1dull);
}

static void sh_fill(uint64_t *v, uint64_t key, int ver, uint32_t len) {
  v[0] = key;
  v[1] = (uint64_t)len | (uint64_t)ver << 32;
  for (uint32_t i = 2; i < len / 8; i++) v[i] = sh_word(key, ver, i);
}

/* A found value, all of it. */
static int sh_value_ok(const uint64_t *v, uint64_t key) {
  int ver = sh_updated(key);
  uint32_t len = sh_len(key, ver);
  if (v[0] != key || v[1] != ((uint64_t)len | (uint64_t)ver << 32)) return 0;
  for (uint32_t i = 2; i < len / 8; i++)
    if (v[i] != sh_word(key, ver, i)) return 0;
  return 1;
}

/* A found value in the lookups/s phase: key, length, version, last word. */
static inline int sh_value_quick(const uint64_t *v, uint64_t key) {
  int ver = sh_updated(key);
  uint32_t len = sh_len(key, ver);
  return v[0] == key && v[1] == ((uint64_t)len | (uint64_t)ver << 32) &&
         v[len / 8 - 1] == sh_word(key, ver, len / 8 - 1);
}

/* ---------------------------------------------------------------------------
 * The B+-tree. Inner node: n separators, n + 1 children; child i holds the
 * keys k with key[i-1] <= k < key[i]. Leaves are chained in key order.
 * ------------------------------------------------------------------------- */

#define BT_FAN 31

typedef struct bt_leaf {
  int32_t n, leaf;
  struct bt_leaf *next;
  uint64_t key[BT_FAN];
  uint64_t *val[BT_FAN];
} bt_leaf_t;

typedef struct bt_inner {
  int32_t n, leaf;
  uint64_t key[BT_FAN];
  void *child[BT_FAN + 1];
} bt_inner_t;

_Static_assert(sizeof(bt_leaf_t) == 512 && sizeof(bt_inner_t) == 512, "nodes fill 512 B slots");

#define SH_MAGIC 0x5348415244ull   /* "SHARD" */

/* A shard's root object: in its region (dist) or malloc'ed (pack). */
typedef struct shard {
  uint64_t magic;
  int32_t id, height;        /* height 1: the root is a leaf */
  int64_t nkeys, value_bytes, nodes;
  void *root;
  bt_leaf_t *first;
  rid_t region;              /* -1: malloc memory */
} shard_t;

static void *sh_alloc(rid_t region, size_t size) {
  void *p = region >= 0 ? sys_alloc(size, region) : malloc(size);
  if (p == NULL) sh_die(region >= 0 ? "sys_alloc" : "malloc");
  return p;
}

static void sh_release(rid_t region, void *p) {
  if (region >= 0) {
    if (sys_free(p) != 0) sh_die("sys_free");
  } else {
    free(p);
  }
}

/* The first i with key[i] >= k. */
static inline int bt_lower(const uint64_t *key, int n, uint64_t k) {
  int lo = 0, hi = n;
  while (lo < hi) {
    int mid = (lo + hi) / 2;
    if (key[mid] < k) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/* The first i with key[i] > k: the child that holds k. */
static inline int bt_upper(const uint64_t *key, int n, uint64_t k) {
  int lo = 0, hi = n;
  while (lo < hi) {
    int mid = (lo + hi) / 2;
    if (key[mid] <= k) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

static const uint64_t *bt_lookup(const shard_t *s, uint64_t k) {
  const void *node = s->root;
  for (int h = s->height; h > 1; h--) {
    const bt_inner_t *in = node;
    node = in->child[bt_upper(in->key, in->n, k)];
  }
  const bt_leaf_t *l = node;
  int i = bt_lower(l->key, l->n, k);
  return i < l->n && l->key[i] == k ? l->val[i] : NULL;
}

static bt_leaf_t *bt_new_leaf(shard_t *s) {
  bt_leaf_t *l = sh_alloc(s->region, sizeof *l);
  l->n = 0, l->leaf = 1, l->next = NULL;
  s->nodes++;
  return l;
}

static bt_inner_t *bt_new_inner(shard_t *s) {
  bt_inner_t *in = sh_alloc(s->region, sizeof *in);
  in->n = 0, in->leaf = 0;
  s->nodes++;
  return in;
}

/* Inserts (k, v) under node (h levels to the leaves). Returns the new right
 * sibling when node split, with *up its first key. */
static void *bt_insert_at(shard_t *s, void *node, int h, uint64_t k, uint64_t *v, uint64_t *up) {
  if (h == 1) {
    bt_leaf_t *l = node;
    int i = bt_lower(l->key, l->n, k);
    if (i < l->n && l->key[i] == k) sh_wrong("build", s->id, k, "key inserted twice");
    if (l->n < BT_FAN) {
      memmove(&l->key[i + 1], &l->key[i], (size_t)(l->n - i) * sizeof l->key[0]);
      memmove(&l->val[i + 1], &l->val[i], (size_t)(l->n - i) * sizeof l->val[0]);
      l->key[i] = k, l->val[i] = v, l->n++;
      return NULL;
    }
    uint64_t key[BT_FAN + 1];
    uint64_t *val[BT_FAN + 1];
    memcpy(key, l->key, (size_t)i * sizeof key[0]);
    memcpy(val, l->val, (size_t)i * sizeof val[0]);
    key[i] = k, val[i] = v;
    memcpy(&key[i + 1], &l->key[i], (size_t)(BT_FAN - i) * sizeof key[0]);
    memcpy(&val[i + 1], &l->val[i], (size_t)(BT_FAN - i) * sizeof val[0]);
    bt_leaf_t *r = bt_new_leaf(s);
    int left = (BT_FAN + 1) / 2;
    l->n = left;
    r->n = BT_FAN + 1 - left;
    memcpy(l->key, key, (size_t)left * sizeof key[0]);
    memcpy(l->val, val, (size_t)left * sizeof val[0]);
    memcpy(r->key, &key[left], (size_t)r->n * sizeof key[0]);
    memcpy(r->val, &val[left], (size_t)r->n * sizeof val[0]);
    r->next = l->next, l->next = r;
    *up = r->key[0];
    return r;
  }
  bt_inner_t *in = node;
  int i = bt_upper(in->key, in->n, k);
  uint64_t sep;
  void *right = bt_insert_at(s, in->child[i], h - 1, k, v, &sep);
  if (right == NULL) return NULL;
  if (in->n < BT_FAN) {
    memmove(&in->key[i + 1], &in->key[i], (size_t)(in->n - i) * sizeof in->key[0]);
    memmove(&in->child[i + 2], &in->child[i + 1], (size_t)(in->n - i) * sizeof in->child[0]);
    in->key[i] = sep, in->child[i + 1] = right, in->n++;
    return NULL;
  }
  uint64_t key[BT_FAN + 1];
  void *child[BT_FAN + 2];
  memcpy(key, in->key, (size_t)i * sizeof key[0]);
  key[i] = sep;
  memcpy(&key[i + 1], &in->key[i], (size_t)(BT_FAN - i) * sizeof key[0]);
  memcpy(child, in->child, (size_t)(i + 1) * sizeof child[0]);
  child[i + 1] = right;
  memcpy(&child[i + 2], &in->child[i + 1], (size_t)(BT_FAN - i) * sizeof child[0]);
  bt_inner_t *r = bt_new_inner(s);
  int mid = (BT_FAN + 1) / 2;   /* key[mid] goes up */
  in->n = mid;
  memcpy(in->key, key, (size_t)mid * sizeof key[0]);
  memcpy(in->child, child, (size_t)(mid + 1) * sizeof child[0]);
  r->n = BT_FAN - mid;
  memcpy(r->key, &key[mid + 1], (size_t)r->n * sizeof key[0]);
  memcpy(r->child, &child[mid + 1], (size_t)(r->n + 1) * sizeof child[0]);
  *up = key[mid];
  return r;
}

static void bt_insert(shard_t *s, uint64_t k, uint64_t *v) {
  uint64_t sep;
  void *right = bt_insert_at(s, s->root, s->height, k, v, &sep);
  if (right != NULL) {
    bt_inner_t *root = bt_new_inner(s);
    root->n = 1, root->key[0] = sep, root->child[0] = s->root, root->child[1] = right;
    s->root = root, s->height++;
  }
}

/* The value slot of k, for an update. */
static uint64_t **bt_slot(shard_t *s, uint64_t k) {
  void *node = s->root;
  for (int h = s->height; h > 1; h--) {
    bt_inner_t *in = node;
    node = in->child[bt_upper(in->key, in->n, k)];
  }
  bt_leaf_t *l = node;
  int i = bt_lower(l->key, l->n, k);
  return i < l->n && l->key[i] == k ? &l->val[i] : NULL;
}

static shard_t *sh_new(rid_t region, int id) {
  shard_t *s = sh_alloc(region, sizeof *s);
  *s = (shard_t){.magic = SH_MAGIC, .id = id, .height = 1, .region = region};
  s->root = s->first = bt_new_leaf(s);
  return s;
}

static uint64_t *sh_new_value(shard_t *s, uint64_t k, int ver) {
  uint32_t len = sh_len(k, ver);
  uint64_t *v = sh_alloc(s->region, len);
  sh_fill(v, k, ver, len);
  s->value_bytes += len;
  return v;
}

/* Frees a malloc'ed tree (a region goes with sys_rfree). */
static void bt_free(void *node, int h) {
  if (h == 1) {
    bt_leaf_t *l = node;
    for (int i = 0; i < l->n; i++) free(l->val[i]);
  } else {
    bt_inner_t *in = node;
    for (int i = 0; i <= in->n; i++) bt_free(in->child[i], h - 1);
  }
  free(node);
}

static void sh_free(shard_t *s) {
  if (s->region >= 0) {
    if (sys_rfree(s->region) != 0) sh_die("sys_rfree");
  } else {
    bt_free(s->root, s->height);
    free(s);
  }
}

/* ---------------------------------------------------------------------------
 * Pack and rebuild: the hand-written MPI peer.
 * Message: header, keys[n], lens[n] (uint32, padded to 8 B), value bytes.
 * ------------------------------------------------------------------------- */

typedef struct pk_hdr {
  uint64_t magic;
  int64_t id, n, value_bytes;
} pk_hdr_t;

static size_t pk_size(int64_t n, int64_t value_bytes) {
  return sizeof(pk_hdr_t) + 8 * (size_t)n + (((size_t)n * 4 + 7) & ~(size_t)7) + (size_t)value_bytes;
}

/* Packs s into a new buffer; its size in *size. */
static char *pk_pack(const shard_t *s, size_t *size) {
  *size = pk_size(s->nkeys, s->value_bytes);
  char *buf = malloc(*size);
  if (buf == NULL) sh_die("malloc of a pack buffer");
  pk_hdr_t *h = (pk_hdr_t *)buf;
  *h = (pk_hdr_t){SH_MAGIC, s->id, s->nkeys, s->value_bytes};
  uint64_t *keys = (uint64_t *)(h + 1);
  uint32_t *lens = (uint32_t *)(keys + s->nkeys);
  char *bytes = buf + pk_size(s->nkeys, 0);
  int64_t j = 0;
  for (const bt_leaf_t *l = s->first; l != NULL; l = l->next)
    for (int i = 0; i < l->n; i++, j++) {
      uint32_t len = (uint32_t)l->val[i][1];   /* a real store keeps its lengths; ours sit in the value */
      keys[j] = l->key[i];
      lens[j] = len;
      memcpy(bytes, l->val[i], len);
      bytes += len;
    }
  if (j != s->nkeys || bytes != buf + *size) sh_wrong("pack", s->id, 0, "the leaves hold other than nkeys keys");
  return buf;
}

/* Rebuilds a tree from a received message: a malloc a value, full leaves,
 * then each inner level from the one below. */
static shard_t *pk_rebuild(const char *buf, size_t size) {
  const pk_hdr_t *h = (const pk_hdr_t *)buf;
  if (size < sizeof *h || h->magic != SH_MAGIC || pk_size(h->n, h->value_bytes) != size)
    sh_wrong("pack", -1, 0, "a malformed message");
  int64_t n = h->n;
  const uint64_t *keys = (const uint64_t *)(h + 1);
  const uint32_t *lens = (const uint32_t *)(keys + n);
  const char *bytes = buf + pk_size(n, 0);
  shard_t *s = malloc(sizeof *s);
  if (s == NULL) sh_die("malloc");
  *s = (shard_t){.magic = SH_MAGIC, .id = (int32_t)h->id, .height = 1, .nkeys = n,
                 .value_bytes = h->value_bytes, .region = -1};
  int64_t nleaves = n == 0 ? 1 : (n + BT_FAN - 1) / BT_FAN;
  void **level = malloc((size_t)nleaves * sizeof *level);
  uint64_t *low = malloc((size_t)nleaves * sizeof *low);   /* each node's first key */
  if (level == NULL || low == NULL) sh_die("malloc");
  bt_leaf_t *prev = NULL;
  int64_t j = 0;
  for (int64_t L = 0; L < nleaves; L++) {
    bt_leaf_t *l = bt_new_leaf(s);
    int64_t end = n * (L + 1) / nleaves;   /* even shares: no near-empty last leaf */
    low[L] = j < n ? keys[j] : 0;
    for (; j < end; j++) {
      uint64_t *v = malloc(lens[j]);
      if (v == NULL) sh_die("malloc");
      memcpy(v, bytes, lens[j]);
      bytes += lens[j];
      l->key[l->n] = keys[j], l->val[l->n] = v, l->n++;
    }
    if (prev) prev->next = l;
    else s->first = l;
    prev = l;
    level[L] = l;
  }
  int64_t count = nleaves;
  while (count > 1) {
    int64_t parents = (count + BT_FAN) / (BT_FAN + 1), c = 0;
    for (int64_t p = 0; p < parents; p++) {
      bt_inner_t *in = bt_new_inner(s);
      int64_t end = count * (p + 1) / parents;
      uint64_t first = low[c];
      for (int first_child = 1; c < end; c++, first_child = 0) {
        if (!first_child) in->key[in->n++] = low[c];
        in->child[in->n] = level[c];
      }
      level[p] = in, low[p] = first;
    }
    count = parents;
    s->height++;
  }
  s->root = level[0];
  free(level), free(low);
  return s;
}

/* ---------------------------------------------------------------------------
 * Keys of the shards a worker builds or receives
 * ------------------------------------------------------------------------- */

typedef struct sh_keys {
  int id;
  int64_t n;
  uint64_t *key;   /* sorted */
} sh_keys_t;

static int sh_cmp_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return (x > y) - (x < y);
}

/* The keys of shards first .. first+count-1, sorted; with order != NULL
 * also all of them in one random order (the insertion order). */
static sh_keys_t *sh_collect(int first, int count, uint64_t **order, int64_t *norder) {
  int nshards = sh_workers * sh_o.shards;
  sh_keys_t *k = calloc((size_t)count, sizeof *k);
  int64_t *cap = calloc((size_t)count, sizeof *cap), total = 0;
  if (k == NULL || cap == NULL) sh_die("calloc");
  for (int i = 0; i < count; i++) k[i].id = first + i;
  for (long j = 0; j < sh_o.keys; j++) {
    uint64_t key = sh_key(j);
    int i = sh_shard_of(key, nshards) - first;
    if (i < 0 || i >= count) continue;
    if (k[i].n == cap[i]) {
      cap[i] = cap[i] ? 2 * cap[i] : 1024;
      if ((k[i].key = realloc(k[i].key, (size_t)cap[i] * 8)) == NULL) sh_die("realloc");
    }
    k[i].key[k[i].n++] = key;
    total++;
  }
  if (order != NULL) {
    uint64_t *o = malloc((size_t)(total ? total : 1) * 8);
    if (o == NULL) sh_die("malloc");
    int64_t m = 0;
    for (int i = 0; i < count; i++) memcpy(o + m, k[i].key, (size_t)k[i].n * 8), m += k[i].n;
    uint64_t r = sh_o.seed ^ (uint64_t)first * 0x9e3779b97f4a7c15ull;
    for (int64_t i = total - 1; i > 0; i--) {
      r = sh_mix(r + 0x9e3779b97f4a7c15ull);
      int64_t j = (int64_t)(r % (uint64_t)(i + 1));
      uint64_t t = o[i];
      o[i] = o[j], o[j] = t;
    }
    *order = o, *norder = total;
  }
  for (int i = 0; i < count; i++) qsort(k[i].key, (size_t)k[i].n, 8, sh_cmp_u64);
  free(cap);
  return k;
}

/* Builds this worker's shards, in one random order of all their keys, then
 * replaces the updated values. */
static void sh_build(int dist, const sh_keys_t *keys, const uint64_t *order, int64_t norder, shard_t **sh) {
  int S = sh_o.shards, first = sh_me * S, nshards = sh_workers * S;
  for (int i = 0; i < S; i++) {
    rid_t r = -1;
    if (dist && (r = sys_ralloc(0, 0)) < 0) sh_die("sys_ralloc");
    sh[i] = sh_new(r, first + i);
  }
  for (int64_t j = 0; j < norder; j++) {
    shard_t *s = sh[sh_shard_of(order[j], nshards) - first];
    bt_insert(s, order[j], sh_new_value(s, order[j], 0));
    s->nkeys++;
  }
  for (int i = 0; i < S; i++) {
    if (sh[i]->nkeys != keys[i].n) sh_wrong("build", sh[i]->id, 0, "key count");
    for (int64_t j = 0; j < keys[i].n; j++) {
      uint64_t k = keys[i].key[j];
      if (!sh_updated(k)) continue;
      uint64_t **slot = bt_slot(sh[i], k), *old = *slot;
      sh[i]->value_bytes -= (int64_t)(uint32_t)old[1];
      sh_release(sh[i]->region, old);
      *slot = sh_new_value(sh[i], k, 1);
    }
  }
}

/* ---------------------------------------------------------------------------
 * Checks and lookups
 * ------------------------------------------------------------------------- */

/* A key just above keys->key[i] that no shard holds, or 0 when there is
 * none (the next key follows at once, or the shard's range ends). */
static uint64_t sh_absent(const sh_keys_t *keys, int64_t i) {
  uint64_t k = keys->key[i] + 1;
  if (k == 0 || (i + 1 < keys->n && keys->key[i + 1] == k)) return 0;
  return sh_shard_of(k, sh_workers * sh_o.shards) == keys->id ? k : 0;
}

/* Everything: the header, the leaf chain (count and order), every key
 * looked up and its value compared in full, and absent keys. */
static void sh_check(const char *variant, const shard_t *s, const sh_keys_t *keys) {
  if (s->magic != SH_MAGIC || s->id != keys->id || s->nkeys != keys->n)
    sh_wrong(variant, keys->id, 0, "the shard's header is wrong");
  int64_t j = 0;
  for (const bt_leaf_t *l = s->first; l != NULL; l = l->next)
    for (int i = 0; i < l->n; i++, j++)
      if (j >= keys->n || l->key[i] != keys->key[j]) sh_wrong(variant, s->id, l->key[i], "leaf chain out of order");
  if (j != keys->n) sh_wrong(variant, s->id, 0, "the leaf chain holds too few keys");
  for (int64_t i = 0; i < keys->n; i++) {
    const uint64_t *v = bt_lookup(s, keys->key[i]);
    if (v == NULL) sh_wrong(variant, s->id, keys->key[i], "not found");
    if (!sh_value_ok(v, keys->key[i])) sh_wrong(variant, s->id, keys->key[i], "wrong value");
    uint64_t absent = sh_absent(keys, i);
    if (absent && bt_lookup(s, absent) != NULL) sh_wrong(variant, s->id, absent, "an absent key found");
  }
}

/* The first lookup after a shard arrives: one key, its value in full. */
static void sh_first_lookup(const char *variant, const shard_t *s, const sh_keys_t *keys) {
  if (s->magic != SH_MAGIC || s->id != keys->id) sh_wrong(variant, keys->id, 0, "the shard's header is wrong");
  uint64_t k = keys->key[(int64_t)(sh_mix(sh_o.seed + (uint64_t)keys->id) % (uint64_t)keys->n)];
  const uint64_t *v = bt_lookup(s, k);
  if (v == NULL || !sh_value_ok(v, k)) sh_wrong(variant, s->id, k, "the first lookup is wrong");
}

/* count random lookups over the shards, 1 in 8 of an absent key, each
 * result checked: lookups per second. */
static double sh_lookups(const char *variant, shard_t *const *s, const sh_keys_t *keys, int nshards, long count,
                         uint64_t salt) {
  if (nshards == 0 || count == 0) return 0;
  uint64_t r = sh_o.seed ^ salt;
  double t0 = bench_now_ns();
  for (long c = 0; c < count; c++) {
    r = sh_mix(r + 0x9e3779b97f4a7c15ull);
    int i = (int)((r >> 32) % (uint64_t)nshards);
    const sh_keys_t *ks = &keys[i];
    int64_t j = (int64_t)((r & 0xffffffffu) % (uint64_t)ks->n);
    uint64_t k = ks->key[j], absent = (r >> 29 & 7) == 0 ? sh_absent(ks, j) : 0;
    const uint64_t *v = bt_lookup(s[i], absent ? absent : k);
    if (absent ? v != NULL : v == NULL || !sh_value_quick(v, k))
      sh_wrong(variant, ks->id, absent ? absent : k, absent ? "an absent key found" : "wrong lookup result");
  }
  return (double)count / ((bench_now_ns() - t0) / 1e9);
}

/* What a first touch of fresh anonymous memory costs here, us a 4 KiB page
 * (a dist receiver writes every page of a shard it receives for the first
 * time): 64 MiB mapped, written once, unmapped. */
static double sh_fault_us(void) {
  size_t size = 64u << 20;
  char *p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) return 0;
  double t0 = bench_now_ns();
  for (size_t i = 0; i < size; i += 4096) p[i] = 1;
  double us = (bench_now_ns() - t0) / 1e3 / (double)(size / 4096);
  munmap(p, size);
  return us;
}

/* ---------------------------------------------------------------------------
 * One variant of one repetition
 * ------------------------------------------------------------------------- */

enum { V_DIST, V_PACK, NVAR };
static const char *const sh_vname[NVAR] = {"dist", "pack"};

/* One repetition's figures, as reduced over the workers (worker 0). */
typedef struct sh_rep {
  double first_ms, first_mean_ms;  /* receivers: slowest, mean */
  double migrate_ms;               /* the last worker to finish */
  double send_ms, recv_ms;         /* slowest sender, slowest receiver */
  double build_ms;                 /* slowest worker */
  double before_per_s, after_per_s;/* lookups/s, senders / receivers summed */
  double bytes_moved, payload_bytes, live_bytes, transfer_ranges, live_objects;
  /* Where the time goes, all moved shards, the mean pair: */
  double prep_ms;                  /* sender: dist, waiting for PACK replies; pack, packing */
  double wire_ms;                  /* receiver: in sys_recv, or MPI_Probe + MPI_Recv (waits included) */
  double rebuild_ms;               /* receiver, pack: rebuilding */
  double check_ms, checks;         /* receiver, dist: sys_recv's resident checks, their waits and count */
} sh_rep_t;

typedef struct sh_world {
  sh_keys_t *own, *in;     /* keys of my shards; of the shards I receive */
  uint64_t *order;
  int64_t norder;
  int role;                /* 1 sender, -1 receiver, 0 neither */
  int peer;
} sh_world_t;

static void sh_barrier(void) {
  if (MPI_Barrier(sys_worker_comm()) != MPI_SUCCESS) sh_die("MPI_Barrier");
}

static sh_rep_t sh_once(int v, const sh_world_t *w) {
  const char *vn = sh_vname[v];
  int S = sh_o.shards, K = sh_o.move;
  shard_t *sh[S], *got[K > 0 ? K : 1];
  /* This worker's figures: the first NMAX reduced by MAX, the rest by SUM. */
  enum { FIRST, DONE, SEND, RECV, BUILD, NMAX, FIRST_SUM = NMAX, BEFORE, AFTER, MOVED, PAYLOAD, LIVE, RANGES,
         OBJECTS, PREP, WIRE, REBUILD, RSCHED, RCALLS, NALL };
  double mine[NALL] = {0};

  sh_barrier();
  double t = bench_now_ns();
  sh_build(v == V_DIST, w->own, w->order, w->norder, sh);
  mine[BUILD] = bench_now_ns() - t;

  shard_t **moving = sh + S - K;   /* a sender moves its last K shards */
  const sh_keys_t *moving_keys = w->own + S - K;
  if (w->role > 0) {
    mine[BEFORE] = sh_lookups(vn, moving, moving_keys, K, sh_o.lookups, 0x1234 + (uint64_t)sh_me);
    for (int i = 0; i < K; i++) {
      mine[PAYLOAD] += 8.0 * (double)moving[i]->nkeys + (double)moving[i]->value_bytes;
      if (v == V_DIST) {
        sys_region_stats_t st;
        if (sys_region_stats(moving[i]->region, 1, &st) != 0) sh_die("sys_region_stats");
        mine[MOVED] += (double)st.transfer_bytes;
        mine[LIVE] += (double)st.live_bytes;
        mine[RANGES] += (double)st.transfer_ranges;
        mine[OBJECTS] += (double)st.live_objects;
        if (sh_o.trace)
          fprintf(stderr, "trace dist worker %d shard %d: %lld transfer bytes in %lld ranges, %lld live bytes, "
                          "%lld full + %lld partial + %lld free slabs\n", sh_me, moving[i]->id,
                  (long long)st.transfer_bytes, (long long)st.transfer_ranges, (long long)st.live_bytes,
                  (long long)st.slabs_full, (long long)st.slabs_partial, (long long)st.slabs_free);
      } else {
        mine[MOVED] += (double)pk_size(moving[i]->nkeys, moving[i]->value_bytes);
        mine[OBJECTS] += (double)(moving[i]->nodes + moving[i]->nkeys + 1);
      }
    }
  }

  /* The migration, timed. A dist worker's waits for the scheduler are
   * worker_wait_ns across it, less that of the sys_sched_stats call that
   * reads it (an empty pair of calls measures one): a sender's are its PACK
   * requests, a receiver's the resident checks that sys_recv makes. */
  sys_sched_stats_t wa = {0}, wb = {0}, wc;
  if (w->role != 0 && v == V_DIST && (sys_sched_stats(&wa) != 0 || sys_sched_stats(&wb) != 0))
    sh_die("sys_sched_stats");
  double stats_wait = (double)(wb.worker_wait_ns - wa.worker_wait_ns);
  if (sh_o.settle_ms > 0) {   /* lets the kernel finish with the memory freed and written before */
    sh_barrier();
    usleep((useconds_t)sh_o.settle_ms * 1000);
  }
  sh_barrier();
  double t0 = bench_now_ns();
  if (w->role > 0) {
    for (int i = 0; i < K; i++) {
      struct rusage u0, u1;
      double a0 = sh_o.trace ? bench_now_ns() : 0;
      if (sh_o.trace) getrusage(RUSAGE_SELF, &u0);
      if (v == V_DIST) {
        rid_t r = moving[i]->region;
        void *root = moving[i];
        if (sys_send(w->peer, &r, 1, &root, 1) != 0) sh_die("sys_send");
      } else {
        size_t size;
        double a = bench_now_ns();
        char *buf = pk_pack(moving[i], &size);
        mine[PREP] += bench_now_ns() - a;
        if (size > INT_MAX) sh_wrong(vn, moving[i]->id, 0, "a shard over 2 GiB: use more shards");
        if (MPI_Send(buf, (int)size, MPI_BYTE, w->peer, SH_TAG, sys_worker_comm()) != MPI_SUCCESS)
          sh_die("MPI_Send");
        free(buf);
      }
      if (sh_o.trace) {
        getrusage(RUSAGE_SELF, &u1);
        fprintf(stderr, "trace %s worker %d send shard %d: %.3f ms, at %.3f ms, %ld minflt, %ld nivcsw, %ld nvcsw\n",
                vn, sh_me, moving[i]->id, (bench_now_ns() - a0) / 1e6, (bench_now_ns() - t0) / 1e6,
                u1.ru_minflt - u0.ru_minflt, u1.ru_nivcsw - u0.ru_nivcsw, u1.ru_nvcsw - u0.ru_nvcsw);
      }
    }
    mine[SEND] = mine[DONE] = bench_now_ns() - t0;
    if (v == V_DIST) {
      if (sys_sched_stats(&wc) != 0) sh_die("sys_sched_stats");
      mine[PREP] = (double)(wc.worker_wait_ns - wb.worker_wait_ns) - stats_wait;
    }
  } else if (w->role < 0) {
    for (int i = 0; i < K; i++) {
      struct rusage u0, u1;
      if (sh_o.trace) getrusage(RUSAGE_SELF, &u0);
      double a = bench_now_ns();
      if (v == V_DIST) {
        rid_t r = SYS_NO_REGION;
        void *root = NULL;
        if (sys_recv(w->peer, &r, 1, &root, 1) != 0) sh_die("sys_recv");
        mine[WIRE] += bench_now_ns() - a;
        got[i] = root;
        if (root == NULL || got[i]->region != r) sh_wrong(vn, w->in[i].id, 0, "the root object is not the region's");
      } else {
        MPI_Status st;
        int size;
        if (MPI_Probe(w->peer, SH_TAG, sys_worker_comm(), &st) != MPI_SUCCESS ||
            MPI_Get_count(&st, MPI_BYTE, &size) != MPI_SUCCESS)
          sh_die("MPI_Probe");
        char *buf = malloc((size_t)size);
        if (buf == NULL) sh_die("malloc of a receive buffer");
        if (MPI_Recv(buf, size, MPI_BYTE, w->peer, SH_TAG, sys_worker_comm(), MPI_STATUS_IGNORE) != MPI_SUCCESS)
          sh_die("MPI_Recv");
        double b = bench_now_ns();
        mine[WIRE] += b - a;
        got[i] = pk_rebuild(buf, (size_t)size);
        free(buf);
        mine[REBUILD] += bench_now_ns() - b;
      }
      if (sh_o.trace) {
        sys_sched_stats_t t;
        getrusage(RUSAGE_SELF, &u1);
        if (v == V_DIST && sys_sched_stats(&t) == 0)
          fprintf(stderr, "trace dist worker %d: %lld calls to the scheduler so far, waited %.3f ms\n", sh_me,
                  (long long)t.worker_calls, (double)t.worker_wait_ns / 1e6);
        fprintf(stderr, "trace %s worker %d recv shard %d: %.3f ms, at %.3f ms, %ld minflt, %ld nivcsw, %ld nvcsw\n",
                vn, sh_me, w->in[i].id, (bench_now_ns() - a) / 1e6, (bench_now_ns() - t0) / 1e6,
                u1.ru_minflt - u0.ru_minflt, u1.ru_nivcsw - u0.ru_nivcsw, u1.ru_nvcsw - u0.ru_nvcsw);
      }
      if (i == 0) {
        sh_first_lookup(vn, got[0], &w->in[0]);
        mine[FIRST] = mine[FIRST_SUM] = bench_now_ns() - t0;
      }
    }
    mine[RECV] = mine[DONE] = bench_now_ns() - t0;
    if (v == V_DIST) {
      if (sys_sched_stats(&wc) != 0) sh_die("sys_sched_stats");
      mine[RSCHED] = (double)(wc.worker_wait_ns - wb.worker_wait_ns) - stats_wait;
      mine[RCALLS] = (double)(wc.worker_calls - wb.worker_calls - 1);
    }
  }

  /* Untimed: the pack sender lets its copies go; every migrated shard, and
   * every shard a worker kept, is checked in full (a worker's own memory
   * must come through a migration, and sys_recv's resident check, intact). */
  if (w->role > 0 && v == V_PACK)
    for (int i = 0; i < K; i++) sh_free(moving[i]);
  if (w->role < 0)
    for (int i = 0; i < K; i++) sh_check(vn, got[i], &w->in[i]);
  for (int i = 0; i < (w->role > 0 ? S - K : S); i++) sh_check(vn, sh[i], &w->own[i]);

  sh_barrier();
  if (w->role < 0) mine[AFTER] = sh_lookups(vn, got, w->in, K, sh_o.lookups, 0x5678 + (uint64_t)sh_me);

  /* Everything goes: the shards kept, the ones received. */
  int kept = w->role > 0 ? S - K : S;
  for (int i = 0; i < kept; i++) sh_free(sh[i]);
  if (w->role < 0)
    for (int i = 0; i < K; i++) sh_free(got[i]);
  if (sys_barrier() != 0) sh_die("sys_barrier");   /* every sys_rfree before the next build */

  double max[NMAX], sum[NALL - NMAX];
  MPI_Reduce(mine, max, NMAX, MPI_DOUBLE, MPI_MAX, 0, sys_worker_comm());
  MPI_Reduce(mine + NMAX, sum, NALL - NMAX, MPI_DOUBLE, MPI_SUM, 0, sys_worker_comm());
  int receivers = sh_workers / 2;
  return (sh_rep_t){.first_ms = max[FIRST] / 1e6, .first_mean_ms = sum[FIRST_SUM - NMAX] / receivers / 1e6,
                    .migrate_ms = max[DONE] / 1e6, .send_ms = max[SEND] / 1e6, .recv_ms = max[RECV] / 1e6,
                    .build_ms = max[BUILD] / 1e6, .before_per_s = sum[BEFORE - NMAX],
                    .after_per_s = sum[AFTER - NMAX], .bytes_moved = sum[MOVED - NMAX],
                    .payload_bytes = sum[PAYLOAD - NMAX], .live_bytes = sum[LIVE - NMAX],
                    .transfer_ranges = sum[RANGES - NMAX], .live_objects = sum[OBJECTS - NMAX],
                    .prep_ms = sum[PREP - NMAX] / receivers / 1e6, .wire_ms = sum[WIRE - NMAX] / receivers / 1e6,
                    .rebuild_ms = sum[REBUILD - NMAX] / receivers / 1e6,
                    .check_ms = sum[RSCHED - NMAX] / receivers / 1e6, .checks = sum[RCALLS - NMAX] / receivers};
}

/* ---------------------------------------------------------------------------
 * Output
 * ------------------------------------------------------------------------- */

static sh_rep_t sh_medians(const sh_rep_t *rep, int reps) {
  enum { N = sizeof(sh_rep_t) / sizeof(double) };
  sh_rep_t m;
  double col[reps];
  for (int j = 0; j < N; j++) {
    for (int k = 0; k < reps; k++) col[k] = ((const double *)&rep[k])[j];
    ((double *)&m)[j] = bench_median(col, (size_t)reps);
  }
  return m;
}

/* s with JSON's specials escaped and anything below a space dropped. */
static void sh_json_str(FILE *f, const char *s) {
  fputc('"', f);
  for (; *s; s++) {
    if (*s == '"' || *s == '\\') fputc('\\', f);
    if ((unsigned char)*s >= ' ') fputc(*s, f);
  }
  fputc('"', f);
}

static void sh_json_variant(FILE *f, const char *name, const sh_rep_t *m, const sh_rep_t *rep, int reps) {
  fprintf(f, "\"%s\": {\"first_ms\": %.4f, \"first_mean_ms\": %.4f, \"migrate_ms\": %.4f, \"send_ms\": %.4f, "
             "\"recv_ms\": %.4f, \"build_ms\": %.3f, \"lookups_per_s_before\": %.1f, "
             "\"lookups_per_s_after\": %.1f, \"bytes_moved\": %.0f, \"payload_bytes\": %.0f, "
             "\"live_bytes\": %.0f, \"transfer_ranges\": %.0f, \"objects\": %.0f, \"prep_ms\": %.4f, "
             "\"wire_ms\": %.4f, \"rebuild_ms\": %.4f, \"check_wait_ms\": %.4f, \"checks\": %.2f, "
             "\"first_ms_reps\": [",
          name, m->first_ms, m->first_mean_ms, m->migrate_ms, m->send_ms, m->recv_ms, m->build_ms,
          m->before_per_s, m->after_per_s, m->bytes_moved, m->payload_bytes, m->live_bytes, m->transfer_ranges,
          m->live_objects, m->prep_ms, m->wire_ms, m->rebuild_ms, m->check_ms, m->checks);
  for (int k = 0; k < reps; k++) fprintf(f, "%s%.4f", k ? ", " : "", rep[k].first_ms);
  fprintf(f, "], \"migrate_ms_reps\": [");
  for (int k = 0; k < reps; k++) fprintf(f, "%s%.4f", k ? ", " : "", rep[k].migrate_ms);
  fprintf(f, "]}");
}

static void sh_report(sh_rep_t *rep[NVAR], double fault_us) {
  sh_rep_t m[NVAR];
  for (int v = 0; v < NVAR; v++) m[v] = sh_medians(rep[v], sh_o.reps);
  const sh_rep_t *d = &m[V_DIST], *p = &m[V_PACK];
  double first_x = p->first_ms / d->first_ms, migrate_x = p->migrate_ms / d->migrate_ms;
  double lookup_x = d->after_per_s / p->after_per_s;
  int nshards = sh_workers * sh_o.shards, pairs = sh_workers / 2;
  const char *lease = getenv("MANYMALLOC_DIST_LEASE");
  const char *mode = lease != NULL && strcmp(lease, "0") == 0 ? "remote" : "local";
  const char *layout = getenv("MANYMALLOC_SCHEDULERS");
  if (layout == NULL || *layout == '\0') layout = "1";
  char lib[MPI_MAX_LIBRARY_VERSION_STRING] = "", host[256] = "";
  int len = 0;
  MPI_Get_library_version(lib, &len);
  lib[strcspn(lib, "\n,")] = '\0';
  gethostname(host, sizeof host - 1);
  long cores = sysconf(_SC_NPROCESSORS_ONLN);

  printf("dist-shards: %d workers (%d pairs), schedulers %s, %s; %ld keys in %d shards (%.0f a shard), "
         "values %d-%d B, %d%% updated; each sender moves %d shards; medians of %d repetitions\n",
         sh_workers, pairs, layout, mode, sh_o.keys, nshards, (double)sh_o.keys / nshards, sh_o.vmin, sh_o.vmax,
         sh_o.updates, sh_o.move, sh_o.reps);
  printf("  %-38s %12s %12s %8s\n", "", "dist", "pack", "pack/dist");
  printf("  %-38s %12.3f %12.3f %7.2fx\n", "first correct lookup, slowest (ms)", d->first_ms, p->first_ms, first_x);
  printf("  %-38s %12.3f %12.3f %7.2fx\n", "first correct lookup, mean (ms)", d->first_mean_ms, p->first_mean_ms,
         p->first_mean_ms / d->first_mean_ms);
  printf("  %-38s %12.3f %12.3f %7.2fx\n", "migration of all shards (ms)", d->migrate_ms, p->migrate_ms, migrate_x);
  printf("  %-38s %12.3f %12.3f\n", "sender: PACK waits / packing (ms)", d->prep_ms, p->prep_ms);
  printf("  %-38s %12.3f %12.3f\n", "receiver: receiving (ms)", d->wire_ms, p->wire_ms);
  printf("  %-38s %12s %12.3f\n", "receiver: rebuilding (ms)", "-", p->rebuild_ms);
  printf("  %-38s %12.3f %12s\n", "receiver: resident-check waits (ms)", d->check_ms, "-");
  printf("  %-38s %12.2f %12s\n", "receiver: resident checks", d->checks, "-");
  printf("  %-38s %12.0f %12.0f %7.2fx\n", "bytes moved", d->bytes_moved, p->bytes_moved,
         p->bytes_moved / d->bytes_moved);
  printf("  %-38s %12.0f %12.0f\n", "live bytes (dist) / payload (pack)", d->live_bytes, p->payload_bytes);
  printf("  %-38s %12.0f\n", "transfer ranges (dist)", d->transfer_ranges);
  printf("  %-38s %12.3g %12.3g %7.2fx\n", "lookups/s before, senders", d->before_per_s, p->before_per_s,
         p->before_per_s / d->before_per_s);
  printf("  %-38s %12.3g %12.3g %7.2fx\n", "lookups/s after, receivers", d->after_per_s, p->after_per_s,
         p->after_per_s / d->after_per_s);
  printf("  first touch of a fresh page: %.2f us\n", fault_us);
  printf("  goal: first lookup on the receiver >= 2x faster than pack/rebuild: %s (%.2fx)\n",
         first_x >= 2 ? "met" : "NOT met", first_x);

  bench_out_dir("dist-shards", sh_o.out);
  char path[4096];
  snprintf(path, sizeof path, "%s/shards.jsonl", sh_o.out);
  FILE *f = fopen(path, "a");
  if (f == NULL) sh_die("fopen of shards.jsonl");
  fprintf(f, "{\"mode\": \"%s\", \"layout\": \"%s\", \"workers\": %d, \"pairs\": %d, \"keys\": %ld, "
             "\"shards_per_worker\": %d, \"shards\": %d, \"move\": %d, \"value_min\": %d, \"value_max\": %d, "
             "\"updates_pct\": %d, \"reps\": %d, \"lookups\": %ld, \"fanout\": %d, \"node_bytes\": %zu, "
             "\"cores\": %ld, \"fault_us_per_page\": %.3f, \"settle_ms\": %d, \"host\": ",
          mode, layout, sh_workers, pairs, sh_o.keys, sh_o.shards, nshards, sh_o.move, sh_o.vmin, sh_o.vmax,
          sh_o.updates, sh_o.reps, sh_o.lookups, BT_FAN, sizeof(bt_leaf_t), cores, fault_us, sh_o.settle_ms);
  sh_json_str(f, host);
  fprintf(f, ", \"mpi\": ");
  sh_json_str(f, lib);
  const char *copy = getenv("OMPI_MCA_btl_vader_single_copy_mechanism");
  fprintf(f, ", \"single_copy\": ");
  sh_json_str(f, copy != NULL && *copy ? copy : "default");
  fprintf(f, ", ");
  for (int v = 0; v < NVAR; v++) {
    sh_json_variant(f, sh_vname[v], &m[v], rep[v], sh_o.reps);
    fprintf(f, ", ");
  }
  fprintf(f, "\"first_x\": %.3f, \"migrate_x\": %.3f, \"lookups_after_x\": %.3f, "
             "\"goal\": {\"what\": \"first correct lookup on the receiver >= 2x faster than pack/rebuild\", "
             "\"value\": %.3f, \"limit\": 2, \"met\": %s}}\n",
          first_x, migrate_x, lookup_x, first_x, first_x >= 2 ? "true" : "false");
  bench_out_close("dist-shards", f, "shards.jsonl");
}

/* ---------------------------------------------------------------------------
 * Options and main
 * ------------------------------------------------------------------------- */

static void sh_usage(const char *prog) {
  if (sh_me == 0)
    fprintf(stderr, "usage: %s [--out DIR (.)] [--keys N (200000)] [--shards S a worker (4)] "
                    "[--move K shards a sender moves (2)] [--reps R (3)] [--lookups L a receiver (200000)] "
                    "[--value-min B (64)] [--value-max B (256)] [--updates PCT (25)] [--seed X (1)] [--trace 0|1] [--settle-ms MS (0)]\n"
                    "  (even workers send to the next odd one: 2 workers or more)\n", prog);
  exit(2);
}

static long sh_count(const char *prog, const char *s, long min) {
  char *end;
  long v = strtol(s, &end, 10);
  if (end == s || *end != '\0' || v < min) sh_usage(prog);
  return v;
}

static void sh_parse(int argc, char **argv) {
  if (argc % 2 == 0) sh_usage(argv[0]);   /* every option takes a value */
  for (int i = 1; i < argc; i += 2) {
    const char *a = argv[i], *v = argv[i + 1];
    if (strcmp(a, "--out") == 0) sh_o.out = v;
    else if (strcmp(a, "--keys") == 0) sh_o.keys = sh_count(argv[0], v, 1);
    else if (strcmp(a, "--shards") == 0) sh_o.shards = (int)sh_count(argv[0], v, 1);
    else if (strcmp(a, "--move") == 0) sh_o.move = (int)sh_count(argv[0], v, 1);
    else if (strcmp(a, "--reps") == 0) sh_o.reps = (int)sh_count(argv[0], v, 1);
    else if (strcmp(a, "--lookups") == 0) sh_o.lookups = sh_count(argv[0], v, 0);
    else if (strcmp(a, "--value-min") == 0) sh_o.vmin = (int)sh_count(argv[0], v, 16);
    else if (strcmp(a, "--value-max") == 0) sh_o.vmax = (int)sh_count(argv[0], v, 16);
    else if (strcmp(a, "--updates") == 0) sh_o.updates = (int)sh_count(argv[0], v, 0);
    else if (strcmp(a, "--seed") == 0) sh_o.seed = (uint64_t)sh_count(argv[0], v, 0);
    else if (strcmp(a, "--trace") == 0) sh_o.trace = (int)sh_count(argv[0], v, 0);
    else if (strcmp(a, "--settle-ms") == 0) sh_o.settle_ms = (int)sh_count(argv[0], v, 0);
    else sh_usage(argv[0]);
  }
  if (sh_o.vmin % 8 || sh_o.vmax % 8 || sh_o.vmax < sh_o.vmin || sh_o.vmax > 4096 || sh_o.updates > 100 ||
      sh_o.move > sh_o.shards || sh_workers < 2)
    sh_usage(argv[0]);
}

int myrmics_main(int argc, char **argv) {
  sh_o = (sh_opts_t){.out = ".", .keys = 200000, .shards = 4, .move = 2, .reps = 3, .lookups = 200000,
                     .vmin = 64, .vmax = 256, .updates = 25, .seed = 1};
  sh_me = sys_worker_id();
  sh_workers = sys_num_workers();
  sh_parse(argc, argv);
  sh_world_t w = {0};
  int S = sh_o.shards, K = sh_o.move;
  if (sh_me % 2 == 0 && sh_me + 1 < sh_workers) w.role = 1, w.peer = sh_me + 1;
  else if (sh_me % 2 == 1) w.role = -1, w.peer = sh_me - 1;
  w.own = sh_collect(sh_me * S, S, &w.order, &w.norder);
  if (w.role < 0) w.in = sh_collect(w.peer * S + S - K, K, NULL, NULL);
  int empty = 0;
  for (int i = 0; i < S; i++) empty |= w.own[i].n == 0;
  MPI_Allreduce(MPI_IN_PLACE, &empty, 1, MPI_INT, MPI_LOR, sys_worker_comm());
  if (empty) {
    if (sh_me == 0) fprintf(stderr, "dist-shards: a shard has no keys: more --keys or fewer --shards\n");
    return 2;
  }

  double fault_us = sh_me == 0 ? sh_fault_us() : 0;
  sh_rep_t *rep[NVAR];
  for (int v = 0; v < NVAR; v++)
    if ((rep[v] = malloc((size_t)sh_o.reps * sizeof *rep[v])) == NULL) sh_die("malloc");
  for (int k = 0; k < sh_o.reps; k++)
    for (int i = 0; i < NVAR; i++) {
      int v = (i + k) % NVAR;   /* the order alternates */
      rep[v][k] = sh_once(v, &w);
    }
  if (sh_me == 0) sh_report(rep, fault_us);
  for (int v = 0; v < NVAR; v++) free(rep[v]);
  for (int i = 0; i < S; i++) free(w.own[i].key);
  if (w.in)
    for (int i = 0; i < K; i++) free(w.in[i].key);
  free(w.own), free(w.in), free(w.order);
  return 0;
}
