/* main.c - ringsteerctl: dispatches to one subcommand per file. */
#include <stdio.h>
#include <string.h>

#include "ctl.h"

static const char usage[] =
	"usage: ringsteerctl COMMAND [ARGS]\n"
	"\n"
	"commands:\n"
	"  ring --gateways ID[,ID...] owner MEMBER   ring owner of MEMBER\n"
	"  ring --gateways ID[,ID...] walk MEMBER    distinct gateways clockwise from MEMBER\n"
	"  place --gateways ID=LOAD[,...] MEMBER     where the bounded-load rule places MEMBER\n"
	"  sim [OPTIONS]                             compare placement policies (sim --help)\n"
	"  token --secret FILE --member ID --ttl S   mint a supervisor token\n"
	"  gateways [--store URL] [--all] [--json]   gateways in the store, with their load\n"
	"  sessions [--store URL] [--all] [--json] [--gateway ID]\n"
	"                                            supervisor sessions in the store\n"
	"  drain ID [--store URL]                    ask a gateway to drain (hand off its supervisors)\n"
	"  maps [--json] [--pin-dir DIR]             the agent's kernel steering maps in this netns\n"
	"\n"
	"Exit status: 0 success, 1 failure, 2 bad arguments.\n";

int main(int argc, char **argv)
{
	static const struct {
		const char *name;
		int (*run)(int argc, char **argv);
	} commands[] = {
		{ "ring", ctl_ring },
		{ "place", ctl_place },
		{ "sim", ctl_sim },
		{ "token", ctl_token },
		{ "gateways", ctl_gateways },
		{ "sessions", ctl_sessions },
		{ "drain", ctl_drain },
		{ "maps", ctl_maps },
	};

	if (argc < 2) {
		fputs("ringsteerctl: missing command (try --help)\n", stderr);
		return 2;
	}
	if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "help") == 0) {
		fputs(usage, stdout);
		return 0;
	}
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		if (strcmp(argv[1], commands[i].name) == 0)
			return commands[i].run(argc - 1, argv + 1);
	fprintf(stderr, "ringsteerctl: unknown command '%s' (try --help)\n", argv[1]);
	return 2;
}
