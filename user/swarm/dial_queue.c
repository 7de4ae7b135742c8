/* SPDX-License-Identifier: Apache-2.0 */
/* dial_queue.c - --concurrency: at most K links connecting or awaiting
 * their answer at once, so that a swarm of 10,000 starting together is a
 * bounded storm on the client side too.  Members waiting for a slot stand
 * in one FIFO threaded through the member array (no allocation); members
 * already on their way (a redirect, a redial, a refresh) go to its front,
 * fresh Service dials to its back.  A member whose dial was cancelled while
 * it waited is skipped when its turn comes (want_dial cleared), so nothing
 * is ever removed from the middle. */
#include "swarm.h"

bool swarm_dial_slot(struct swarm *sw)
{
	if (sw->in_progress >= sw->cfg.concurrency)
		return false;
	sw->in_progress++;
	return true;
}

void swarm_dial_release(struct swarm *sw)
{
	sw->in_progress--;
	/* Not from here: the caller may be about to take the slot itself (a
	 * REDIRECT frees its link, then dials the target at once). */
	if (sw->queue_head && !sw->stopping)
		event_active(sw->pump_ev, EV_TIMEOUT, 0);
}

void swarm_dial_enqueue(struct swarm *sw, struct swarm_member *m, bool urgent)
{
	if (m->queued)
		return; /* still in line: it keeps its place, with its new wish */
	m->queued = true;
	if (urgent || !sw->queue_tail) {
		m->queue_next = sw->queue_head;
		sw->queue_head = m->number;
		if (!sw->queue_tail)
			sw->queue_tail = m->number;
		return;
	}
	m->queue_next = 0;
	sw->members[sw->queue_tail - 1].queue_next = m->number;
	sw->queue_tail = m->number;
}

void swarm_on_pump(evutil_socket_t fd, short what, void *arg)
{
	struct swarm *sw = arg;

	(void)fd;
	(void)what;
	/* Bounded: each turn takes one member off the queue, and a member
	 * re-enters it only through a later event. */
	while (sw->queue_head && !sw->stopping && sw->in_progress < sw->cfg.concurrency) {
		struct swarm_member *m = &sw->members[sw->queue_head - 1];

		sw->queue_head = m->queue_next;
		if (!sw->queue_head)
			sw->queue_tail = 0;
		m->queue_next = 0;
		m->queued = false;
		if (!m->want_dial)
			continue;
		sw->in_progress++;
		swarm_member_dial_now(sw, m);
	}
}
