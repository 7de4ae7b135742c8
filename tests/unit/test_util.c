/* SPDX-License-Identifier: Apache-2.0 */
/* test_util.c - endpoint parsing and formatting, and logfmt quoting. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "util/endpoint.h"
#include "util/logfmt.h"
#include "util/small_file.h"

static void test_endpoint_round_trip(void **state)
{
	static const char *const good[] = { "127.0.0.1:7000", "127.0.1.2:1", "0.0.0.0:65535", "[::1]:7001",
					    "[fe80::1:2]:80" };
	static const char *const bad[] = { "", "127.0.0.1", "127.0.0.1:", "127.0.0.1:0", "127.0.0.1:65536",
					   "127.0.0.1:7x", ":7000", "::1:7000", "[::1]7000", "[]:7000",
					   "[127.0.0.1]:7000", "localhost:7000", "127.0.0.1:+7", "1.2.3.4.5:6" };
	struct sockaddr_storage ss;
	socklen_t len;
	char out[64];

	(void)state;
	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		assert_int_equal(rs_endpoint_parse(good[i], &ss, &len), 0);
		assert_int_equal(rs_endpoint_format((struct sockaddr *)&ss, out, sizeof(out)), 0);
		assert_string_equal(out, good[i]);
	}
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_int_equal(rs_endpoint_parse(bad[i], &ss, &len), -EINVAL);
	assert_int_equal(rs_endpoint_parse(NULL, &ss, &len), -EINVAL);
	assert_int_equal(rs_address_parse("127.0.2.9", &ss, &len), 0);
	assert_int_equal(rs_address_parse("::1", &ss, &len), 0);
	assert_int_equal(rs_address_parse("127.0.2.9:1", &ss, &len), -EINVAL);
	assert_int_equal(rs_address_parse("", &ss, &len), -EINVAL);
	assert_int_equal(rs_endpoint_parse("[::1]:7001", &ss, &len), 0);
	assert_int_equal(rs_endpoint_format((struct sockaddr *)&ss, out, 8), -ENOSPC);
}

static void test_logfmt_quotes(void **state)
{
	char buf[512];
	FILE *f = tmpfile();
	size_t n;

	(void)state;
	assert_non_null(f);
	rs_log(f, "info", "gateway=gw-1", "event", "decision", "text", "two words", "q", "say \"hi\"", "eq", "a=b",
	       "empty", "", "ctl", "x\ny", NULL);
	rewind(f);
	n = fread(buf, 1, sizeof(buf) - 1, f);
	buf[n] = '\0';
	fclose(f);
	assert_non_null(strstr(buf, " level=info gateway=gw-1 event=decision "));
	assert_non_null(strstr(buf, "text=\"two words\""));
	assert_non_null(strstr(buf, "q=\"say \\\"hi\\\"\""));
	assert_non_null(strstr(buf, "eq=\"a=b\""));
	assert_non_null(strstr(buf, "empty=\"\""));
	assert_non_null(strstr(buf, "ctl=\"x\\x0ay\""));
	assert_int_equal(strncmp(buf, "ts=", 3), 0);
	assert_int_equal(buf[n - 1], '\n');
	assert_ptr_equal(strchr(buf, '\n'), buf + n - 1); /* exactly one line */
}

static void write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

static void test_small_file(void **state)
{
	char dir[] = "/tmp/rs-util-XXXXXX", path[64], buf[8];
	size_t len = 99;

	(void)state;
	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/f", dir);
	write_file(path, "12 \r\n\n");
	assert_int_equal(rs_read_small_file(path, buf, sizeof(buf), &len), 0);
	assert_string_equal(buf, "12");
	assert_int_equal(len, 2);
	write_file(path, "1234567"); /* exactly cap - 1 bytes fits */
	assert_int_equal(rs_read_small_file(path, buf, sizeof(buf), &len), 0);
	assert_int_equal(len, 7);
	write_file(path, "12345678");
	assert_int_equal(rs_read_small_file(path, buf, sizeof(buf), &len), -EFBIG);
	write_file(path, "");
	assert_int_equal(rs_read_small_file(path, buf, sizeof(buf), &len), 0);
	assert_int_equal(len, 0);
	unlink(path);
	assert_int_equal(rs_read_small_file(path, buf, sizeof(buf), &len), -ENOENT);
	assert_int_equal(rs_read_small_file(dir, buf, sizeof(buf), &len), -EISDIR);
	rmdir(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_endpoint_round_trip),
		cmocka_unit_test(test_logfmt_quotes),
		cmocka_unit_test(test_small_file),
	};

	return cmocka_run_group_tests_name("util", tests, NULL, NULL);
}
