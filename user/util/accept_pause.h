/* SPDX-License-Identifier: Apache-2.0 */
/* accept_pause.h - what a listener does when accept fails (out of
 * descriptors or memory): libevent's listener with no error callback warns
 * and returns, the socket stays readable, and the loop spins on it at 100%
 * CPU writing a warning each time.  With this, the listener stops
 * accepting and tries again after a backoff (100 ms doubling to 1 s), each
 * failure is counted by errno, and one line is logged when an episode
 * starts and one when it ends (the first pause with no failure after it). */
#ifndef RINGSTEER_ACCEPT_PAUSE_H
#define RINGSTEER_ACCEPT_PAUSE_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include <event2/event.h>
#include <event2/listener.h>

#define RS_ACCEPT_PAUSE_MIN_MS 100
#define RS_ACCEPT_PAUSE_MAX_MS 1000

/* The errno values counted apart, as metric labels; order = enum. */
enum rs_accept_errno { RS_ACCEPT_EMFILE, RS_ACCEPT_ENFILE, RS_ACCEPT_ENOBUFS, RS_ACCEPT_ENOMEM, RS_ACCEPT_OTHER,
		       RS_ACCEPT_ERRNO_COUNT };

struct rs_accept_pause {
	struct evconnlistener *lst;
	struct event *timer;
	FILE *log;
	const char *who;          /* the log lines' "daemon=id" */
	const char *name;         /* the listener, in log lines: "listen", "peer" */
	uint32_t delay_ms;        /* the next pause; 0: no episode */
	bool paused;              /* the listener is disabled now */
	int64_t since_ms;         /* monotonic: when the episode began */
	uint64_t episode_errors;
	uint64_t errors[RS_ACCEPT_ERRNO_COUNT]; /* every failed accept, since start */
};

/* Prepares p for lst (the caller sets lst's error callback to one that
 * calls rs_accept_pause_error with p).  Returns 0 or -ENOMEM. */
int rs_accept_pause_init(struct rs_accept_pause *p, struct event_base *base, struct evconnlistener *lst, FILE *log,
			 const char *who, const char *name);

/* From the listener's error callback: errno says why accept failed. */
void rs_accept_pause_error(struct rs_accept_pause *p);

/* Frees the timer; a zeroed p is allowed. */
void rs_accept_pause_free(struct rs_accept_pause *p);

/* The metric label of an errno class ("EMFILE", ...). */
const char *rs_accept_errno_label(enum rs_accept_errno e);

/* For listeners whose error callback cannot reach a struct rs_accept_pause
 * (evhttp's: its callback argument is the struct evhttp): disables lst and
 * enables it again after RS_ACCEPT_PAUSE_MAX_MS, neither counted nor
 * logged.  lst must outlive the loop's run (it is freed after the loop). */
void rs_accept_pause_bare(struct evconnlistener *lst, void *unused);

#endif
