/* SPDX-License-Identifier: Apache-2.0 */
/* gen_corpus.c - writes the seed corpora of fuzz_token and fuzz_agent_reg
 * with the real encoders (not a fuzz target: the Makefile builds only
 * fuzz_*.c).  Run from the repository root after `make all`:
 *
 *   cc -std=c17 -D_GNU_SOURCE -Iinclude -Iuser -o build/gen_corpus tests/fuzz/gen_corpus.c \
 *      build/libringsteer.a -levent -lsqlite3 -lcrypto -lpq
 *   build/gen_corpus tests/fuzz/corpus
 *
 * The token secret is fuzz_token.c's (secret_fill, salt 1), so its seeds
 * are authentic tokens, expired and not, that the fuzzer mutates from. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "registration/agent_reg.h"
#include "ringsteer/proto.h"
#include "ringsteer/token.h"
#include "token/token_kid.h"

static int put(const char *dir, const char *name, const void *bytes, size_t n)
{
	char path[512];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "wb");
	if (!f || fwrite(bytes, 1, n, f) != n) {
		perror(path);
		if (f)
			fclose(f);
		return -1;
	}
	return fclose(f);
}

static int tokens(const char *dir)
{
	static const struct { const char *member; uint64_t expiry; } t[] = {
		{ "sup-1", 1800000000ULL },   /* valid at fuzz_token's clock */
		{ "sup-1", 1600000000ULL },   /* expired */
		{ "a.b.c-d", 4102444800ULL }, /* dots in the member */
		{ "x", 0 },
		{ "sup-42", UINT64_MAX },
	};
	/* Keyed tokens (keyring.h): the key id is signed with the rest. */
	static const struct { const char *kid, *member; uint64_t expiry; } k[] = {
		{ "k1", "sup-1", 1800000000ULL },
		{ "2026-12-rotation", "a.b", 1600000000ULL },
	};
	struct rs_secret key = { .len = 32 };
	char tok[RS_TOKEN_MAX + 1], name[32];
	uint8_t mint_seed[8 + 16];
	int rc = 0;

	for (size_t i = 0; i < key.len; i++)
		key.key[i] = (uint8_t)(i * 7 + 1);
	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		if (rs_token_mint(&key, t[i].member, t[i].expiry, tok, sizeof(tok)) != 0)
			return -1;
		snprintf(name, sizeof(name), "token-%zu", i);
		rc |= put(dir, name, tok, strlen(tok));
	}
	for (size_t i = 0; i < sizeof(k) / sizeof(k[0]); i++) {
		if (rs_token_mint_kid(&key, k[i].kid, k[i].member, k[i].expiry, tok, sizeof(tok)) != 0)
			return -1;
		snprintf(name, sizeof(name), "token-kid-%zu", i);
		rc |= put(dir, name, tok, strlen(tok));
	}
	/* check_minted reads 8 bytes of expiry then the member. */
	memcpy(mint_seed, "\x00\x00\x00\x00\x6b\x49\xd2\x00sup-7.node-a", 8 + 12);
	rc |= put(dir, "mint-sup-7", mint_seed, 8 + 12);
	return rc;
}

static int agent_reg(const char *dir)
{
	struct rs_agent_reg_request req = { .version = RS_AGENT_REG_VERSION };
	struct rs_agent_reg_reply rep = { 0 };
	uint8_t buf[RS_AGENT_REG_MSG_MAX];
	size_t len;
	int rc = 0;

	req.role = RS_AGENT_ROLE_LISTEN;
	snprintf(req.gateway_id, sizeof(req.gateway_id), "gw-1");
	if (rs_agent_reg_encode_request(&req, buf, sizeof(buf), &len))
		return -1;
	rc |= put(dir, "request-listen", buf, len);
	req.role = RS_AGENT_ROLE_PEER;
	memset(req.gateway_id, 'a', RS_ID_MAX);
	req.gateway_id[RS_ID_MAX] = '\0';
	if (rs_agent_reg_encode_request(&req, buf, sizeof(buf), &len))
		return -1;
	rc |= put(dir, "request-peer-longest-id", buf, len);

	rep.status = RS_AGENT_REG_STATUS_OK;
	rep.slot = 3;
	snprintf(rep.text, sizeof(rep.text), "registered");
	if (rs_agent_reg_encode_reply(&rep, buf, sizeof(buf), &len))
		return -1;
	rc |= put(dir, "reply-ok", buf, len);
	rep.status = RS_AGENT_REG_STATUS_REFUSED;
	rep.reason = RS_AGENT_REG_NOT_LISTENING;
	snprintf(rep.text, sizeof(rep.text), "%s", rs_agent_reg_reason_text(rep.reason));
	if (rs_agent_reg_encode_reply(&rep, buf, sizeof(buf), &len))
		return -1;
	rc |= put(dir, "reply-refused", buf, len);
	rep.reason = RS_AGENT_REG_INTERNAL;
	rep.text[0] = '\0';
	if (rs_agent_reg_encode_reply(&rep, buf, sizeof(buf), &len))
		return -1;
	rc |= put(dir, "reply-refused-empty-text", buf, len);
	/* A later version's header: the decoders must say "version". */
	buf[4] = RS_AGENT_REG_VERSION + 1;
	rc |= put(dir, "reply-version-2", buf, len);
	return rc;
}

int main(int argc, char **argv)
{
	char dir[400];

	if (argc != 2) {
		fprintf(stderr, "usage: gen_corpus CORPUS_DIR\n");
		return 2;
	}
	snprintf(dir, sizeof(dir), "%s/fuzz_token", argv[1]);
	mkdir(dir, 0755);
	if (tokens(dir))
		return 1;
	snprintf(dir, sizeof(dir), "%s/fuzz_agent_reg", argv[1]);
	mkdir(dir, 0755);
	if (agent_reg(dir))
		return 1;
	return 0;
}
