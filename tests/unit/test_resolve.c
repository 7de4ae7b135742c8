/* SPDX-License-Identifier: Apache-2.0 */
/* test_resolve.c - "NAME:PORT" endpoints (util/resolve.h) and the resolver
 * thread (util/resolver.h): which texts are names, numeric endpoints
 * answered without a lookup, and the thread's bookkeeping: every callback
 * on the loop, once; a cancelled request's never; a free with requests
 * outstanding runs none and leaks nothing (ASan).  Names themselves are
 * looked up by the acceptance and kernel tests, from hosts files of their
 * own (tests/cluster/with_names.sh), never from this machine's. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>
#include <event2/event.h>

#include "util/resolve.h"
#include "util/resolver.h"

static void test_names(void **state)
{
	static const char *const names[] = { "gw.test:7000", "ringsteer.ringsteer.svc:7000", "a:1", "UPPER_case-1.x:65535",
					     "10.0.0.1.example:80" };
	static const char *const not_names[] = { "127.0.0.1:7000", "[::1]:7000", "10.0.0:80", "name:0", "name:65536",
						 "name", ":80", "-bad:80", ".bad:80", "a b:80", "name:80x", "[name]:80",
						 "name:", "name:-1", "na/me:80", "name:+80" };

	(void)state;
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		assert_true(rs_endpoint_is_name(names[i]));
		assert_true(rs_endpoint_ok(names[i]));
	}
	for (size_t i = 0; i < sizeof(not_names) / sizeof(not_names[0]); i++)
		assert_false(rs_endpoint_is_name(not_names[i]));
	assert_true(rs_endpoint_ok("127.0.0.1:7000"));
	assert_true(rs_endpoint_ok("[::1]:7000"));
	assert_false(rs_endpoint_ok("10.0.0:80"));
	assert_false(rs_endpoint_ok("name"));
}

static void test_numeric_now(void **state)
{
	struct rs_resolved r;
	const char *why = NULL;

	(void)state;
	assert_int_equal(rs_resolve_now("127.0.0.1:80", &r, &why), 0);
	assert_int_equal(r.n, 1);
	assert_int_equal(r.addr[0].ss_family, AF_INET);
	assert_int_equal(ntohs(((struct sockaddr_in *)&r.addr[0])->sin_port), 80);
	assert_int_equal(rs_resolve_now("[::1]:443", &r, &why), 0);
	assert_int_equal(r.n, 1);
	assert_int_equal(r.addr[0].ss_family, AF_INET6);
	assert_int_equal(ntohs(((struct sockaddr_in6 *)&r.addr[0])->sin6_port), 443);
	assert_int_equal(rs_resolve_now("not an endpoint", &r, &why), -EINVAL);
	assert_non_null(why);
	assert_int_equal(r.n, 0);
}

struct seen {
	int calls;
	int err;
	size_t n;
	uint16_t port;
	struct event_base *base;
	int *left; /* callbacks still expected; the loop stops at 0 */
};

static void on_answer(void *arg, int err, const char *why, const struct rs_resolved *r)
{
	struct seen *s = arg;

	s->calls++;
	s->err = err;
	s->n = err ? 0 : r->n;
	if (!err && r->n)
		s->port = ntohs(((const struct sockaddr_in *)&r->addr[0])->sin_port);
	if (err)
		assert_non_null(why);
	if (--*s->left == 0)
		event_base_loopbreak(s->base);
}

/* Runs base until *left reaches 0, at most 5 s. */
static void run(struct event_base *base)
{
	struct timeval limit = { 5, 0 };

	event_base_loopexit(base, &limit);
	event_base_dispatch(base);
}

static void test_thread_answers_each_once(void **state)
{
	struct event_base *base = event_base_new();
	struct rs_resolver *r = NULL;
	struct rs_resolve_req *cancelled = NULL;
	struct seen s[5] = { 0 };
	int left = 4;

	(void)state;
	assert_non_null(base);
	assert_int_equal(rs_resolver_new(base, &r), 0);
	for (int i = 0; i < 5; i++) {
		s[i].base = base;
		s[i].left = &left;
	}
	/* Two for the same endpoint one after the other (one lookup answers
	 * both), another, a bad one, and one cancelled before it is answered. */
	assert_int_equal(rs_resolve_start(r, "127.0.0.1:7000", on_answer, &s[0], NULL), 0);
	assert_int_equal(rs_resolve_start(r, "127.0.0.1:7000", on_answer, &s[1], NULL), 0);
	assert_int_equal(rs_resolve_start(r, "127.0.0.2:7001", on_answer, &s[2], NULL), 0);
	assert_int_equal(rs_resolve_start(r, "bad name:1", on_answer, &s[3], NULL), 0);
	assert_int_equal(rs_resolve_start(r, "127.0.0.3:7002", on_answer, &s[4], &cancelled), 0);
	assert_non_null(cancelled);
	rs_resolve_cancel(cancelled);
	run(base);
	assert_int_equal(left, 0);
	for (int i = 0; i < 3; i++) {
		assert_int_equal(s[i].calls, 1);
		assert_int_equal(s[i].err, 0);
		assert_int_equal(s[i].n, 1);
	}
	assert_int_equal(s[0].port, 7000);
	assert_int_equal(s[1].port, 7000);
	assert_int_equal(s[2].port, 7001);
	assert_int_equal(s[3].calls, 1);
	assert_int_equal(s[3].err, -EINVAL);
	/* The cancelled one's answer may have arrived with the others: no call. */
	left = 1;
	{
		struct timeval t = { 0, 200000 };

		event_base_loopexit(base, &t);
		event_base_dispatch(base);
	}
	assert_int_equal(s[4].calls, 0);
	rs_resolver_free(r);
	event_base_free(base);
}

static void test_free_with_requests_outstanding(void **state)
{
	struct event_base *base = event_base_new();
	struct rs_resolver *r = NULL;
	struct seen s = { 0 };
	int left = 1000;

	(void)state;
	s.base = base;
	s.left = &left;
	assert_int_equal(rs_resolver_new(base, &r), 0);
	for (int i = 0; i < 1000; i++)
		assert_int_equal(rs_resolve_start(r, "127.0.0.1:80", on_answer, &s, NULL), 0);
	rs_resolver_free(r); /* before the loop ran: none of them is called back */
	event_base_loop(base, EVLOOP_NONBLOCK);
	assert_int_equal(s.calls, 0);
	event_base_free(base);
	rs_resolver_free(NULL);
}

static void test_too_long(void **state)
{
	struct event_base *base = event_base_new();
	struct rs_resolver *r = NULL;
	char longer[400];
	struct seen s = { 0 };

	(void)state;
	memset(longer, 'a', sizeof(longer) - 1);
	longer[sizeof(longer) - 1] = '\0';
	assert_int_equal(rs_resolver_new(base, &r), 0);
	assert_int_equal(rs_resolve_start(r, longer, on_answer, &s, NULL), -EINVAL);
	rs_resolver_free(r);
	event_base_free(base);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_names),
		cmocka_unit_test(test_numeric_now),
		cmocka_unit_test(test_thread_answers_each_once),
		cmocka_unit_test(test_free_with_requests_outstanding),
		cmocka_unit_test(test_too_long),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
