/* SPDX-License-Identifier: Apache-2.0 */
/* program_version.c - `--version` and ringsteer_build_info.  A constant 1
 * labelled with the build, the usual Prometheus idiom: it joins onto any
 * series by instance, and a fleet mid-rollout shows as two label sets. */
#include <stdio.h>

#include "ringsteer/version.h"
#include "util/http.h"
#include "util/program_version.h"

void rs_program_version(const char *prog)
{
	printf("%s %s (commit %s)\n", prog, rs_version(), rs_build_commit());
}

void rs_metrics_build_info(struct evbuffer *b)
{
	/* Version digits and a git hash need no label escaping. */
	rs_metrics_family(b, "ringsteer_build_info", "gauge",
			  "Always 1: the version and source commit of the running build.");
	evbuffer_add_printf(b, "ringsteer_build_info{version=\"%s\",commit=\"%s\"} 1\n", rs_version(),
			    rs_build_commit());
}
