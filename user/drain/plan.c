/* SPDX-License-Identifier: Apache-2.0 */
/* plan.c - the handoff plan of a stopping gateway.  Each supervisor is
 * placed as a handoff whose stale record is on the stopping gateway, so N
 * stays the number of live supervisors and the stopping gateway, now
 * draining, is off the ring for the search; committing each step makes the
 * plan's own earlier assignments count as load for the next. */
#include <errno.h>
#include <string.h>

#include "ringsteer/drain.h"

int rs_drain_plan(struct rs_placer *p, uint32_t stopping, const char *const *members, size_t n,
		  uint32_t *targets)
{
	struct rs_gateway_load st;
	int err;

	err = rs_placer_get(p, stopping, &st);
	if (err)
		return err;
	if (st.load < n)
		return -EINVAL;
	/* Every id is checked before anything changes: a bad one must not
	 * leave half a plan applied. */
	for (size_t i = 0; i < n; i++)
		if (!members[i] || !members[i][0] || strlen(members[i]) > RS_ID_MAX)
			return -EINVAL;
	if (!st.draining) {
		st.draining = true;
		rs_placer_set(p, stopping, &st);
	}
	if (n > 0 && rs_placer_active(p) == 0)
		return -ENOENT;
	for (size_t i = 0; i < n; i++) {
		struct rs_arrival a = {
			.member_id = members[i],
			.handoff = true,
			.at = -1,
			.stale = (int)stopping,
		};
		struct rs_decision d;

		err = rs_placer_place(p, &a, &d);
		if (err)
			return err;
		targets[i] = d.gateway;
	}
	return 0;
}
