/* SPDX-License-Identifier: Apache-2.0 */
/* consumer.c - another team's program, built only from an installed
 * libringsteer (tests/install/install_test.sh: pkg-config over a staged
 * root, no -I into this tree), so that it proves the installed headers and
 * library are enough by themselves: the version, a ring, a gateway core.
 *
 * Usage: consumer GATEWAY... -- KEY...
 * Prints "version V", then "owner KEY GATEWAY" per key, then "core ok". */
#include <stdio.h>
#include <string.h>

#include <ringsteer/gateway_core.h>
#include <ringsteer/ring.h>
#include <ringsteer/version.h>

/* The version the library says must be the one its headers promise. */
static int check_version(void)
{
	char want[32];

	snprintf(want, sizeof(want), "%d.%d.%d", RINGSTEER_VERSION_MAJOR, RINGSTEER_VERSION_MINOR,
		 RINGSTEER_VERSION_PATCH);
	if (strcmp(rs_version(), want) != 0 || strcmp(rs_version(), RINGSTEER_VERSION_STRING) != 0) {
		fprintf(stderr, "consumer: rs_version() %s, headers %s\n", rs_version(), want);
		return -1;
	}
	printf("version %s\n", rs_version());
	return 0;
}

static int print_owners(const char *const *ids, size_t n, char *const *keys, size_t nkeys)
{
	struct rs_ring *ring;
	int err = rs_ring_new(ids, n, &ring);

	if (err) {
		fprintf(stderr, "consumer: rs_ring_new: %d\n", err);
		return -1;
	}
	for (size_t i = 0; i < nkeys; i++) {
		int gw = rs_ring_owner(ring, keys[i]);

		if (gw < 0) {
			fprintf(stderr, "consumer: rs_ring_owner(%s): %d\n", keys[i], gw);
			rs_ring_free(ring);
			return -1;
		}
		printf("owner %s %s\n", keys[i], rs_ring_gateway_id(ring, (size_t)gw));
	}
	rs_ring_free(ring);
	return 0;
}

/* The core only queues work through these; nothing here runs it. */
static void cb_send(void *user, void *link_user, const struct rs_frame *f)
{
	(void)user, (void)link_user, (void)f;
}

static void cb_close(void *user, void *link_user)
{
	(void)user, (void)link_user;
}

static void cb_resume(void *user, void *link_user)
{
	(void)user, (void)link_user;
}

static int cb_store(void *user, struct rs_gw_store_req *req)
{
	(void)user, (void)req;
	return 0;
}

static void cb_exit(void *user)
{
	(void)user;
}

/* A core with the least a gateway must say, made, asked when it wakes,
 * and freed. */
static int core_roundtrip(void)
{
	struct rs_secret secret = { .len = 32 };
	struct rs_gw_core_config cfg = {
		.id = "gw-a",
		.advertise_peer = "10.0.0.1:7000",
		.secret = &secret,
		.heartbeat_ms = 5000,
		.ttl_ms = 15000,
		.hello_timeout_ms = 5000,
		.handoff_timeout_ms = 10000,
		.token_ttl_s = 3600,
		.max_frame = RS_FRAME_MAX,
		.registered = true,
	};
	struct rs_gw_callbacks cb = {
		.send = cb_send, .close = cb_close, .resume = cb_resume, .store = cb_store, .exit = cb_exit,
	};
	struct rs_gw_time now = { .mono_ms = 1000, .wall_ms = 1700000000000 };
	struct rs_gw_gauges g;
	struct rs_gw_core *core;
	int err;

	memcpy(secret.key, "0123456789abcdef0123456789abcdef", 32);
	err = rs_gw_core_new(&cfg, &cb, NULL, now, &core);
	if (err) {
		fprintf(stderr, "consumer: rs_gw_core_new: %d\n", err);
		return -1;
	}
	rs_gw_core_gauges(core, &g);
	if (rs_gw_core_next_wake(core) < now.mono_ms || g.supervisors != 0) {
		fprintf(stderr, "consumer: a new core already has work or supervisors\n");
		rs_gw_core_free(core);
		return -1;
	}
	rs_gw_core_free(core);
	printf("core ok\n");
	return 0;
}

int main(int argc, char **argv)
{
	int sep = 1;

	while (sep < argc && strcmp(argv[sep], "--") != 0)
		sep++;
	if (sep == 1 || sep >= argc - 1) {
		fprintf(stderr, "usage: consumer GATEWAY... -- KEY...\n");
		return 2;
	}
	if (check_version() || print_owners((const char *const *)argv + 1, (size_t)(sep - 1), argv + sep + 1,
					    (size_t)(argc - sep - 1)) ||
	    core_roundtrip())
		return 1;
	return 0;
}
