/* SPDX-License-Identifier: Apache-2.0 */
/* main.c - ringsteerctl: dispatches to one subcommand per file.  Help is
 * each subcommand's own: `ringsteerctl help COMMAND` runs `COMMAND --help`,
 * so a command's manual lives next to its code. */
#include <stdio.h>
#include <string.h>

#include "ctl.h"
#include "util/program_version.h"

static const char usage[] =
	"NAME\n"
	"    ringsteerctl - inspect and steer ringsteer's placement of supervisors on gateways\n"
	"\n"
	"SYNOPSIS\n"
	"    ringsteerctl COMMAND [ARGS]\n"
	"    ringsteerctl COMMAND --help\n"
	"    ringsteerctl help COMMAND\n"
	"    ringsteerctl --version\n"
	"\n"
	"COMMANDS\n"
	"    status [--store URL] [--ttl MS] [--json] [--watch[=SECONDS]] [--width N]\n"
	"        supervisors per live gateway as a bar chart, and whether they are even\n"
	"    place --gateways ID=LOAD[,...] [--explain] [--json] MEMBER\n"
	"    place --store URL [--ttl MS] [--explain] [--json] MEMBER\n"
	"        where the bounded-load rule places MEMBER arriving now\n"
	"    ring --gateways ID[,ID...] [--json] owner|walk MEMBER\n"
	"        ring owner of MEMBER, or the distinct gateways clockwise from it\n"
	"    ring --store URL [--ttl MS] [--json]\n"
	"        each live gateway's share of the ring\n"
	"    gateways [--store URL] [--ttl MS] [--all] [--json]\n"
	"        gateways in the store, with their load\n"
	"    sessions [--store URL] [--ttl MS] [--all] [--json] [--gateway ID]\n"
	"        supervisor sessions in the store\n"
	"    drain ID [--store URL] [--json]\n"
	"        ask a gateway to drain (hand off its supervisors)\n"
	"    init [--store URL] [--json]\n"
	"        create the store's schema (the one command that creates a store)\n"
	"    maps [--json] [--pin-dir DIR]\n"
	"        the agent's kernel steering maps in this netns\n"
	"    token --secret FILE --member ID --ttl S|--verify TOKEN [--json]\n"
	"        mint or check a supervisor token\n"
	"    sim [OPTIONS] [--json]\n"
	"        compare placement policies in simulation\n"
	"\n"
	"    Commands that read the store open it read-only and never create it;\n"
	"    --ttl MS is the gateways' --ttl (default 15000): older rows are dead.\n"
	"    The store defaults to sqlite:/var/lib/ringsteer/ringsteer.db.\n"
	"\n"
	"EXIT STATUS\n"
	"    0 success, 1 failure, 2 bad arguments (one line on stderr).\n";

static const struct {
	const char *name;
	int (*run)(int argc, char **argv);
} commands[] = {
	{ "status", ctl_status },
	{ "ring", ctl_ring },
	{ "place", ctl_place },
	{ "sim", ctl_sim },
	{ "token", ctl_token },
	{ "gateways", ctl_gateways },
	{ "sessions", ctl_sessions },
	{ "drain", ctl_drain },
	{ "init", ctl_init },
	{ "maps", ctl_maps },
};

static int find_command(const char *name)
{
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		if (strcmp(name, commands[i].name) == 0)
			return (int)i;
	return -1;
}

/* `help [COMMAND]`: the overview, or COMMAND's manual. */
static int help(int argc, char **argv)
{
	char help_flag[] = "--help";
	char *args[3] = { NULL, help_flag, NULL };
	int i;

	if (argc < 3) {
		fputs(usage, stdout);
		return 0;
	}
	if (argc > 3) {
		fprintf(stderr, "ringsteerctl help: expected one COMMAND, got '%s' too\n", argv[3]);
		return 2;
	}
	i = find_command(argv[2]);
	if (i < 0) {
		fprintf(stderr, "ringsteerctl help: unknown command '%s' (try --help)\n", argv[2]);
		return 2;
	}
	args[0] = argv[2];
	return commands[i].run(2, args);
}

int main(int argc, char **argv)
{
	int i;

	if (argc < 2) {
		fputs("ringsteerctl: missing command (try --help)\n", stderr);
		return 2;
	}
	if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
		fputs(usage, stdout);
		return 0;
	}
	if (strcmp(argv[1], "--version") == 0) {
		rs_program_version("ringsteerctl");
		return 0;
	}
	if (strcmp(argv[1], "help") == 0)
		return help(argc, argv);
	i = find_command(argv[1]);
	if (i >= 0)
		return commands[i].run(argc - 1, argv + 1);
	fprintf(stderr, "ringsteerctl: unknown command '%s' (try --help)\n", argv[1]);
	return 2;
}
