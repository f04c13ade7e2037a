/* SPDX-License-Identifier: Apache-2.0 */
/* broken-malloc.so: an allocator with one deliberate bug, preloaded in front
 * of the real one by the tools.mmdriver_catches_* tests to show that
 * mmdriver's validation fails when it should. BROKEN_MALLOC picks the bug;
 * it strikes on every 97th call of the broken function:
 *   overlap   malloc hands out the block it returned last, still live
 *   misalign  malloc returns a pointer 1 byte into its block
 *   corrupt   realloc flips the first byte it keeps
 *   null      malloc returns NULL */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>

static unsigned broken_calls;
static void *broken_last;
static void *(*next_malloc)(size_t);
static void *(*next_realloc)(void *, size_t);
static void (*next_free)(void *);

/* Resolved once, early: a later dlsym could free a pending dlerror string
 * through our own free and recurse. */
__attribute__((constructor)) static void broken_init(void) {
  next_malloc  = (void *(*)(size_t))dlsym(RTLD_NEXT, "malloc");
  next_realloc = (void *(*)(void *, size_t))dlsym(RTLD_NEXT, "realloc");
  next_free    = (void (*)(void *))dlsym(RTLD_NEXT, "free");
}

static int broken_now(const char *bug) {
  const char *want = getenv("BROKEN_MALLOC");
  return want != NULL && strcmp(want, bug) == 0 && ++broken_calls % 97 == 0;
}

void *malloc(size_t size) {
  if (next_malloc == NULL) broken_init();
  if (broken_last != NULL && broken_now("overlap")) return broken_last;
  if (broken_now("misalign")) return (char *)next_malloc(size + 1) + 1;
  if (broken_now("null")) return NULL;
  return broken_last = next_malloc(size);
}

void *realloc(void *p, size_t size) {
  if (next_realloc == NULL) broken_init();
  void *q = next_realloc(p, size);
  if (p != NULL && q != NULL && size > 0 && broken_now("corrupt")) *(unsigned char *)q ^= 1;
  return q;
}

/* Forgets the last block once freed, so `overlap` returns only live blocks. */
void free(void *p) {
  if (next_free == NULL) broken_init();
  if (p == broken_last) broken_last = NULL;
  next_free(p);
}
