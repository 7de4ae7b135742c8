/* SPDX-License-Identifier: Apache-2.0 */
/* ctl_token.c - `ringsteerctl token`: mints a supervisor token from the
 * keyring or cluster secret file (with its signing key), or checks one
 * (with the key the token names).  The file is the gateways' --secret.
 *
 *   token --secret FILE --member ID --ttl SECONDS   prints the token
 *   token --secret FILE --member ID --verify TOKEN  prints "ok expiry=N"
 *
 * The secret is only ever read from a file (never argv, where ps shows it)
 * and is wiped before exit.  Exit status: 0 success (a valid token), 1 a
 * runtime failure or an invalid token (with the reason), 2 bad arguments
 * (one line on stderr). */
#include <errno.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <openssl/crypto.h>

#include "ctl.h"
#include "ctl_args.h"
#include "ctl_json.h"
#include "ringsteer/keyring.h"
#include "ringsteer/proto.h"
#include "ringsteer/token.h"

static const char token_usage[] =
	"NAME\n"
	"    ringsteerctl token - mint or check a supervisor token\n"
	"\n"
	"SYNOPSIS\n"
	"    ringsteerctl token --secret FILE --member ID --ttl SECONDS [--json]\n"
	"    ringsteerctl token --secret FILE --member ID --verify TOKEN [--json]\n"
	"\n"
	"DESCRIPTION\n"
	"    The first form prints a token for supervisor ID that expires SECONDS\n"
	"    (at least 1) from now.  The second checks TOKEN for ID now and prints\n"
	"    \"ok expiry=N\" (exit 0) or why it is not valid (exit 1).\n"
	"    FILE is the gateways' --secret: a keyring (first line\n"
	"    \"ringsteer-keyring v1\", then \"<key-id> <secret> [<since>]\" lines, oldest\n"
	"    first), whose signing key mints and whose key named by the token\n"
	"    verifies; or one cluster secret, 16 to 4096 bytes, one trailing newline\n"
	"    ignored, whose tokens carry no key id.  Its mode must give its group\n"
	"    and others no access (0600 or 0400).  Secrets are never taken from the\n"
	"    command line.\n"
	"\n"
	"OPTIONS\n"
	"    --secret FILE    the keyring or cluster secret\n"
	"    --member ID      the supervisor's member id ([a-z0-9.-])\n"
	"    --ttl SECONDS    mint a token valid that long\n"
	"    --verify TOKEN   check TOKEN instead\n"
	"    --json           mint: {\"member\", \"expires\", \"token\"}; verify:\n"
	"                     {\"member\", \"valid\", \"reason\", \"expires\", \"now\"} (reason:\n"
	"                     ok, expired, wrong-mac or malformed; expires 0 when unknown)\n"
	"    --help           this text\n"
	"\n"
	"EXIT STATUS\n"
	"    0 success (a valid token), 1 a runtime failure or an invalid token,\n"
	"    2 bad arguments.\n"
	"\n"
	"EXAMPLES\n"
	"    ringsteerctl token --secret /etc/ringsteer/secret --member sup-17 --ttl 86400\n";

static int now_seconds(uint64_t *now)
{
	struct timespec ts;

	if (clock_gettime(CLOCK_REALTIME, &ts) != 0)
		return -errno;
	if (ts.tv_sec < 0)
		return -ERANGE;
	*now = (uint64_t)ts.tv_sec;
	return 0;
}

static void print_verdict_json(const char *member, const char *reason, uint64_t expiry, uint64_t now)
{
	(void)ctl_json_print(stdout, json_pack("{s:o, s:b, s:s, s:I, s:I}", "member", ctl_json_text(member), "valid",
					       strcmp(reason, "ok") == 0, "reason", reason, "expires", (json_int_t)expiry,
					       "now", (json_int_t)now));
}

/* Prints the verdict on token; returns the exit status (0 valid, 1 not). */
static int verify_and_print(const struct rs_keyring *keys, const char *token, const char *member,
			    uint64_t now, bool json)
{
	uint64_t expiry = 0;
	int err = rs_keyring_verify(keys, token, member, now, &expiry);

	if (json && (err == 0 || err == -EKEYEXPIRED || err == -EACCES || err == -EINVAL)) {
		print_verdict_json(member, err == 0 ? "ok" : err == -EKEYEXPIRED ? "expired" :
				   err == -EACCES ? "wrong-mac" : "malformed", expiry, now);
		return err == 0 ? 0 : 1;
	}
	switch (err) {
	case 0:
		printf("ok expiry=%llu\n", (unsigned long long)expiry);
		return 0;
	case -EKEYEXPIRED:
		printf("expired expiry=%llu now=%llu\n", (unsigned long long)expiry,
		       (unsigned long long)now);
		return 1;
	case -EACCES:
		puts("invalid: wrong mac, another member's token, or a key not in FILE");
		return 1;
	case -EINVAL:
		puts("invalid: malformed token");
		return 1;
	default:
		fprintf(stderr, "ringsteerctl token: %s\n", strerror(-err));
		return 1;
	}
}

/* token's own options, as given. */
struct token_args {
	const char *secret_path, *member, *ttl_arg, *verify;
};

static int on_own(void *ctx, int val, const char *arg)
{
	struct token_args *t = ctx;

	switch (val) {
	case 's':
		t->secret_path = arg;
		break;
	case 'm':
		t->member = arg;
		break;
	case 't':
		t->ttl_arg = arg;
		break;
	default:
		t->verify = arg;
		break;
	}
	return -1;
}

int ctl_token(int argc, char **argv)
{
	/* --ttl here is the token's lifetime in seconds, not the store's
	 * --ttl MS: token's own option. */
	static const struct option own[] = {
		{ "secret", required_argument, NULL, 's' },
		{ "member", required_argument, NULL, 'm' },
		{ "ttl", required_argument, NULL, 't' },
		{ "verify", required_argument, NULL, 'v' },
		{ 0 },
	};
	struct token_args t = { 0 };
	const struct ctl_cmd_opts cmd = { .name = "token",
					  .usage = token_usage,
					  .shared = CTL_OPT_JSON,
					  .own = own,
					  .own_short = "s:m:t:v:",
					  .on_own = on_own,
					  .ctx = &t };
	struct ctl_opts o;
	static struct rs_keyring keys; /* 33 KiB: off the stack */
	size_t line = 0;
	const char *secret_path, *member, *ttl_arg, *verify;
	char token[RS_TOKEN_MAX + 1];
	uint64_t ttl = 0, now = 0;
	bool json;
	int err = 0, rc;

	rc = ctl_parse_opts(&cmd, argc, argv, &o);
	if (rc >= 0)
		return rc;
	rc = 1;
	secret_path = t.secret_path;
	member = t.member;
	ttl_arg = t.ttl_arg;
	verify = t.verify;
	json = o.json;
	if (optind < argc)
		return ctl_usage_error("token", "unexpected argument '%s'", argv[optind]);
	if (!secret_path)
		return ctl_usage_error("token", "--secret FILE is required");
	if (!member)
		return ctl_usage_error("token", "--member ID is required");
	if (!ttl_arg == !verify)
		return ctl_usage_error("token", "give exactly one of --ttl SECONDS and --verify TOKEN");
	if (ctl_check_member("token", member))
		return 2;
	if (!rs_proto_member_id_ok(member))
		return ctl_usage_error("token", "member id '%s' must be [a-z0-9.-] only", member);
	if (ttl_arg && (ctl_parse_u64(ttl_arg, &ttl) != 0 || ttl == 0))
		return ctl_usage_error("token", "--ttl: '%s' is not a number of seconds >= 1", ttl_arg);

	err = now_seconds(&now);
	if (err)
		goto cleanup;
	if (ttl > UINT64_MAX - now)
		return ctl_usage_error("token", "--ttl: %s is too large", ttl_arg);
	err = rs_keyring_load(secret_path, &keys, &line);
	if (err == -EINVAL && line > 0) {
		fprintf(stderr, "ringsteerctl token: %s:%zu: not a key line \"<key-id> <secret> [<since>]\" (a new key id\n"
			"of [a-z0-9-], a secret of %d to %d bytes, since in unix seconds)\n", secret_path, line,
			RS_SECRET_MIN, RS_SECRET_MAX);
		err = 0;
		goto cleanup;
	}
	if (err == -EINVAL) {
		fprintf(stderr, "ringsteerctl token: %s: a secret must be %d to %d bytes (a keyring: one key at least)\n",
			secret_path, RS_SECRET_MIN, RS_SECRET_MAX);
		err = 0;
		goto cleanup;
	}
	if (err) {
		fprintf(stderr, "ringsteerctl token: %s: %s\n", secret_path, rs_secret_strerror(err));
		err = 0;
		goto cleanup;
	}
	if (verify) {
		rc = verify_and_print(&keys, verify, member, now, json);
		goto cleanup;
	}
	err = rs_keyring_mint(&keys, now, member, now + ttl, token, sizeof(token));
	if (err)
		goto cleanup;
	if (json) {
		(void)ctl_json_print(stdout, json_pack("{s:o, s:I, s:o}", "member", ctl_json_text(member), "expires",
						       (json_int_t)(now + ttl), "token", ctl_json_text(token)));
	} else {
		puts(token);
	}
	if (ferror(stdout) || fflush(stdout) != 0) {
		err = -EIO;
		goto cleanup;
	}
	rc = 0;
cleanup:
	if (rc == 1 && err)
		fprintf(stderr, "ringsteerctl token: %s\n", strerror(-err));
	rs_keyring_wipe(&keys);
	return rc;
}
