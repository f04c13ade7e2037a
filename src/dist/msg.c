/* SPDX-License-Identifier: Apache-2.0 */
/* msg.c: message buffers and the views that parse them. */
#include <stdlib.h>
#include "msg.h"
#include "manymalloc/myrmics.h"

int mmd_buf_reserve(mmd_buf_t *b, size_t cap) {
  if (cap <= b->cap) return 0;
  size_t want = b->cap ? b->cap : 256;
  while (want < cap) want *= 2;
  unsigned char *p = realloc(b->p, want);
  if (p == NULL) return SYS_ERR_NOMEM;
  b->p = p;
  b->cap = want;
  return 0;
}

int mmd_buf_put(mmd_buf_t *b, const void *data, size_t n) {
  if (mmd_buf_reserve(b, b->len + n) != 0) return SYS_ERR_NOMEM;
  if (n) memcpy(b->p + b->len, data, n);
  b->len += n;
  return 0;
}

void mmd_buf_free(mmd_buf_t *b) {
  free(b->p);
  *b = (mmd_buf_t){0};
}

int mmd_req_view(const mmd_buf_t *b, mmd_req_view_t *v) {
  if (b->len < sizeof *v->hdr) return -1;
  v->hdr = (const mmd_req_hdr_t *)b->p;
  size_t reports = (size_t)v->hdr->nreports * sizeof(mmd_report_t);
  if (b->len != sizeof *v->hdr + reports + (size_t)v->hdr->nitems * 8) return -1;
  v->reports = (const mmd_report_t *)(b->p + sizeof *v->hdr);
  v->items = (const uint64_t *)(b->p + sizeof *v->hdr + reports);
  return 0;
}

int mmd_rep_view(const mmd_buf_t *b, mmd_rep_view_t *v) {
  if (b->len < sizeof *v->hdr) return -1;
  v->hdr = (const mmd_rep_hdr_t *)b->p;
  size_t revokes = (size_t)v->hdr->nrevokes * 8, remote = (size_t)v->hdr->nremote * sizeof(mmd_remote_t);
  if (b->len != sizeof *v->hdr + revokes + remote + (size_t)v->hdr->nitems * 8) return -1;
  v->revokes = (const int64_t *)(b->p + sizeof *v->hdr);
  v->remote = (const mmd_remote_t *)(b->p + sizeof *v->hdr + revokes);
  v->items = (const uint64_t *)(b->p + sizeof *v->hdr + revokes + remote);
  return 0;
}
