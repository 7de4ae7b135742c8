/* SPDX-License-Identifier: Apache-2.0 */
/* accept_pause.c - see accept_pause.h.  The backlog keeps the connections
 * that arrive meanwhile; each pause ends with one accept attempt, so out
 * of descriptors the loop does a few system calls a second instead of
 * millions. */
#include <errno.h>
#include <string.h>

#include "util/accept_pause.h"
#include "util/logfmt.h"
#include "util/mstime.h"

static const char *const labels[RS_ACCEPT_ERRNO_COUNT] = {
	[RS_ACCEPT_EMFILE] = "EMFILE", [RS_ACCEPT_ENFILE] = "ENFILE", [RS_ACCEPT_ENOBUFS] = "ENOBUFS",
	[RS_ACCEPT_ENOMEM] = "ENOMEM", [RS_ACCEPT_OTHER] = "other",
};

const char *rs_accept_errno_label(enum rs_accept_errno e)
{
	return (unsigned)e < RS_ACCEPT_ERRNO_COUNT ? labels[e] : "other";
}

static enum rs_accept_errno classify(int err)
{
	switch (err) {
	case EMFILE: return RS_ACCEPT_EMFILE;
	case ENFILE: return RS_ACCEPT_ENFILE;
	case ENOBUFS: return RS_ACCEPT_ENOBUFS;
	case ENOMEM: return RS_ACCEPT_ENOMEM;
	default: return RS_ACCEPT_OTHER;
	}
}

static void arm(struct rs_accept_pause *p)
{
	struct timeval tv = rs_ms_timeval(p->delay_ms);

	(void)evtimer_add(p->timer, &tv);
}

/* The timer: after a pause, accept again and watch one more interval; an
 * interval with no failure ends the episode. */
static void on_timer(evutil_socket_t fd, short what, void *arg)
{
	struct rs_accept_pause *p = arg;
	char n[24], ms[24];

	(void)fd;
	(void)what;
	if (p->paused) {
		p->paused = false;
		(void)evconnlistener_enable(p->lst);
		arm(p);
		return;
	}
	snprintf(n, sizeof(n), "%llu", (unsigned long long)p->episode_errors);
	snprintf(ms, sizeof(ms), "%lld", (long long)(rs_mono_ms() - p->since_ms));
	if (p->log)
		rs_log(p->log, "info", p->who, "event", "accept_resumed", "listener", p->name, "errors", n, "paused_ms",
		       ms, NULL);
	p->delay_ms = 0;
	p->episode_errors = 0;
}

void rs_accept_pause_error(struct rs_accept_pause *p)
{
	int err = errno;

	p->errors[classify(err)]++;
	p->episode_errors++;
	if (p->delay_ms == 0) {
		p->delay_ms = RS_ACCEPT_PAUSE_MIN_MS;
		p->since_ms = rs_mono_ms();
		if (p->log)
			rs_log(p->log, "warn", p->who, "event", "accept_paused", "listener", p->name, "error",
			       strerror(err), NULL);
	} else if (!p->paused) {
		/* Failed again right after a pause: wait longer. */
		p->delay_ms = p->delay_ms * 2 > RS_ACCEPT_PAUSE_MAX_MS ? RS_ACCEPT_PAUSE_MAX_MS : p->delay_ms * 2;
	}
	p->paused = true;
	(void)evconnlistener_disable(p->lst);
	event_del(p->timer);
	arm(p);
}

int rs_accept_pause_init(struct rs_accept_pause *p, struct event_base *base, struct evconnlistener *lst, FILE *log,
			 const char *who, const char *name)
{
	memset(p, 0, sizeof(*p));
	p->lst = lst;
	p->log = log;
	p->who = who;
	p->name = name;
	p->timer = evtimer_new(base, on_timer, p);
	return p->timer ? 0 : -ENOMEM;
}

void rs_accept_pause_free(struct rs_accept_pause *p)
{
	if (p->timer)
		event_free(p->timer);
	p->timer = NULL;
}

static void bare_resume(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	(void)evconnlistener_enable(arg);
}

void rs_accept_pause_bare(struct evconnlistener *lst, void *unused)
{
	struct timeval tv = rs_ms_timeval(RS_ACCEPT_PAUSE_MAX_MS);

	(void)unused;
	if (evconnlistener_disable(lst) == 0 &&
	    event_base_once(evconnlistener_get_base(lst), -1, EV_TIMEOUT, bare_resume, lst, &tv) != 0)
		(void)evconnlistener_enable(lst); /* no timer: spinning beats never accepting again */
}
