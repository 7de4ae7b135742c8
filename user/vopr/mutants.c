/* SPDX-License-Identifier: Apache-2.0 */
/* mutants.c - deliberately broken rules for the counter-check: the
 * simulator must catch each one (tests/cli/vopr_test.sh runs seeds until
 * it does).  A mutant wraps the admission function the simulator's store
 * decides with; nothing of it reaches a core or the library. */
#include <errno.h>
#include <string.h>

#include "ringsteer/placer.h"
#include "vopr/mutants.h"

/* cap+1: a Service arrival the rule would send elsewhere is kept where it
 * landed while that gateway, without the member's own row, is below
 * cap + 1 instead of cap. */
static int admit_cap_plus_one(struct rs_placer *p, const struct rs_admit_input *in, struct rs_admit_outcome *out)
{
	struct rs_gateway_load here;
	uint32_t load;
	int err = rs_admit_decide(p, in, out);

	if (err || in->kind != RS_ARRIVE_SERVICE || in->at < 0 || out->decision.gateway == (uint32_t)in->at ||
	    (out->decision.reason != RS_REASON_PLACED && out->decision.reason != RS_REASON_OWNER_FALLBACK))
		return err;
	if (rs_placer_get(p, (uint32_t)in->at, &here) != 0 || !here.live || here.draining)
		return 0;
	load = here.load - (in->record_at == in->at ? 1 : 0);
	if (load < out->decision.cap + 1) {
		out->decision.gateway = (uint32_t)in->at;
		out->decision.reason = RS_REASON_PLACED;
		out->decision.full = false;
	}
	return 0;
}

ledger_admit_fn mutant_admit(enum vopr_mutant m)
{
	return m == VOPR_MUTANT_CAP_PLUS_ONE ? admit_cap_plus_one : rs_admit_decide;
}

const char *vopr_mutant_name(enum vopr_mutant m)
{
	return m == VOPR_MUTANT_CAP_PLUS_ONE ? "cap+1" : NULL;
}

int vopr_mutant_parse(const char *s, enum vopr_mutant *out)
{
	if (strcmp(s, "none") == 0) {
		*out = VOPR_MUTANT_NONE;
		return 0;
	}
	if (strcmp(s, "cap+1") == 0) {
		*out = VOPR_MUTANT_CAP_PLUS_ONE;
		return 0;
	}
	return -EINVAL;
}
