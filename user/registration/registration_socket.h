/* SPDX-License-Identifier: Apache-2.0 */
/* registration_socket.h - what the agent's two UNIX listeners share (the
 * gateways' registration socket, registration_server.c, which defines
 * these; the supervisors' member socket, member_server.c): the socket's
 * directory and a bounded accept loop that pauses instead of spinning when
 * the process runs out of fds. */
#ifndef RS_REGISTRATION_SOCKET_H
#define RS_REGISTRATION_SOCKET_H

#include <stdio.h>
#include <sys/types.h>

struct event;

/* Creates path's directory (one level) with mode, whatever the umask, if
 * it is missing; an existing one is the operator's and is left as it is.
 * Returns 0 or -errno. */
int rs_reg_socket_dir(const char *path, mode_t mode);

/* Accepts at most a batch of connections on lfd (non-blocking,
 * close-on-exec), handing each to start(ctx, fd).  Out of fds or memory:
 * logs, takes accept_ev off the loop and arms resume_ev, whose callback
 * calls rs_reg_accept_resume. */
void rs_reg_accept_batch(int lfd, struct event *accept_ev, struct event *resume_ev, void (*start)(void *ctx, int fd),
			 void *ctx, FILE *log, const char *who);

/* Puts accept_ev back on the loop after a pause. */
void rs_reg_accept_resume(struct event *accept_ev, FILE *log, const char *who);

#endif
