/* SPDX-License-Identifier: Apache-2.0 */
/* transport.h: every MPI call of dist/ goes through here. Three
 * communicators: requests and replies (workers and schedulers, and
 * schedulers among themselves), transfers between workers, and the
 * program's own (sys_worker_comm). */
#ifndef MMD_TRANSPORT_H
#define MMD_TRANSPORT_H

#include <stdbool.h>
#include <stdint.h>
#include <mpi.h>
#include "msg.h"
#include "ranges.h"

/* 0 or SYS_ERR_MPI. yield_when_idle: where MPI is started here, a rank
 * waiting in it gives its core up between polls (a value the environment
 * already gives Open MPI wins). */
int mmd_tp_init(int *argc, char ***argv, bool yield_when_idle);
int mmd_tp_finalize(void);
int mmd_tp_rank(void);
int mmd_tp_size(void);
/* Collective: true iff ok on every rank. */
bool mmd_tp_all_ok(bool ok);
/* Collective: host_of[r] for every rank r, equal for the ranks of one host
 * (the lowest world rank there). 0 or SYS_ERR_MPI. */
int mmd_tp_hosts(int *host_of);
/* Collective: the communicators; worker_id is this rank's worker ID, or -1
 * on a scheduler (workers' communicators are ordered by it). */
int mmd_tp_open(int worker_id);
MPI_Comm mmd_tp_user_comm(void);

/* Worker side of a request: send, then block for the reply. */
int mmd_tp_call(int sched_rank, const mmd_buf_t *req, mmd_buf_t *rep);
/* A request that gets no reply (the worker's last). */
int mmd_tp_send_request(int sched_rank, const mmd_buf_t *req);
/* Scheduler side: the next message from any rank (*from_sched: a message
 * of another scheduler, which starts with an mmd_link_hdr_t), and a reply
 * to a worker. */
int mmd_tp_next_message(mmd_buf_t *b, int *src_rank, bool *from_sched);
int mmd_tp_reply(int dst_rank, const mmd_buf_t *rep);
/* Whether a scheduler with nothing to do sleeps between polls (leaving its
 * core to workers that share it) rather than spinning. */
void mmd_tp_idle_naps(bool on);
/* To another scheduler, without waiting: b is copied. */
int mmd_tp_link_send(int dst_rank, const mmd_buf_t *b);
/* Waits until every message to other schedulers has left. */
int mmd_tp_link_drain(void);

/* Between workers: a message, then the memory of a list of ranges at the
 * same addresses on both sides (one hindexed datatype over MPI_BOTTOM). */
int mmd_tp_send_msg(int peer_worker, const mmd_buf_t *b);
int mmd_tp_recv_msg(int peer_worker, mmd_buf_t *b);
int mmd_tp_send_ranges(int peer_worker, uintptr_t base, const mmd_ranges_t *l);
int mmd_tp_recv_ranges(int peer_worker, uintptr_t base, const mmd_ranges_t *l);
/* Both ways at once, as MPI_Sendrecv: a message each, then the ranges (the
 * outgoing and incoming lists must not overlap). */
int mmd_tp_exchange_msg(int peer_worker, const mmd_buf_t *out, mmd_buf_t *in);
int mmd_tp_exchange_ranges(int peer_worker, uintptr_t base, const mmd_ranges_t *out, const mmd_ranges_t *in);

/* The largest range one datatype block can carry. */
#define MMD_TP_MAX_BLOCK (1ull << 30)

#endif
