/* SPDX-License-Identifier: Apache-2.0 */
/* test_cidr_nth.c - spreading source addresses over a prefix
 * (rs_cidr_nth): the i-th address, wrapping at the prefix's size, a single
 * host, IPv6 (never carrying into the prefix), and what is refused. */
#include <arpa/inet.h>
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "util/cidr.h"

/* The n-th address of prefix, as text. */
static const char *nth(const char *prefix, uint64_t n)
{
	static char out[INET6_ADDRSTRLEN];
	struct sockaddr_storage ss;
	struct rs_cidr c;
	socklen_t len;

	assert_int_equal(rs_cidr_parse(prefix, &c), 0);
	assert_int_equal(rs_cidr_nth(&c, n, &ss, &len), 0);
	if (ss.ss_family == AF_INET) {
		const struct sockaddr_in *in4 = (const struct sockaddr_in *)&ss;

		assert_int_equal(len, sizeof(*in4));
		assert_int_equal(in4->sin_port, 0);
		assert_non_null(inet_ntop(AF_INET, &in4->sin_addr, out, sizeof(out)));
	} else {
		const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)&ss;

		assert_int_equal(ss.ss_family, AF_INET6);
		assert_int_equal(len, sizeof(*in6));
		assert_non_null(inet_ntop(AF_INET6, &in6->sin6_addr, out, sizeof(out)));
	}
	return out;
}

static void test_ipv4_spread_and_wrap(void **state)
{
	(void)state;
	assert_string_equal(nth("198.18.200.0/24", 0), "198.18.200.0");
	assert_string_equal(nth("198.18.200.0/24", 1), "198.18.200.1");
	assert_string_equal(nth("198.18.200.0/24", 255), "198.18.200.255");
	assert_string_equal(nth("198.18.200.0/24", 256), "198.18.200.0");
	assert_string_equal(nth("198.18.200.0/24", 257), "198.18.200.1");
	/* Past an octet: the carry goes into the next one, inside the prefix. */
	assert_string_equal(nth("198.18.0.0/15", 256), "198.18.1.0");
	assert_string_equal(nth("198.18.0.0/15", 131071), "198.19.255.255");
	assert_string_equal(nth("198.18.0.0/15", 131072), "198.18.0.0");
	assert_string_equal(nth("127.0.3.0/30", 5), "127.0.3.1");
	assert_string_equal(nth("0.0.0.0/0", UINT64_C(0x100000001)), "0.0.0.1");
}

static void test_single_host(void **state)
{
	(void)state;
	assert_string_equal(nth("127.0.2.7/32", 0), "127.0.2.7");
	assert_string_equal(nth("127.0.2.7/32", 12345), "127.0.2.7");
	assert_string_equal(nth("127.0.2.7", 3), "127.0.2.7"); /* a bare address is a /32 */
	assert_string_equal(nth("fd00::5/128", 99), "fd00::5");
}

static void test_ipv6(void **state)
{
	(void)state;
	assert_string_equal(nth("fd00:1::/64", 0), "fd00:1::");
	assert_string_equal(nth("fd00:1::/64", 0x1234), "fd00:1::1234");
	assert_string_equal(nth("fd00:1::/120", 0x101), "fd00:1::1");
	/* More than 2^64 addresses: the offset never wraps nor carries. */
	assert_string_equal(nth("fd00::/8", UINT64_MAX), "fd00::ffff:ffff:ffff:ffff");
	assert_string_equal(nth("fd00:1::/64", UINT64_MAX), "fd00:1::ffff:ffff:ffff:ffff");
	/* An IPv4-mapped prefix is the IPv4 prefix it denotes. */
	assert_string_equal(nth("::ffff:198.18.0.0/120", 258), "198.18.0.2");
}

static void test_refused(void **state)
{
	struct sockaddr_storage ss;
	struct rs_cidr c = { .family = AF_UNIX };
	socklen_t len;

	(void)state;
	assert_int_equal(rs_cidr_nth(&c, 0, &ss, &len), -EINVAL);
	c = (struct rs_cidr){ .family = AF_INET, .prefix = 33 };
	assert_int_equal(rs_cidr_nth(&c, 0, &ss, &len), -EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_ipv4_spread_and_wrap),
		cmocka_unit_test(test_single_host),
		cmocka_unit_test(test_ipv6),
		cmocka_unit_test(test_refused),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
