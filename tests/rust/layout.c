/* SPDX-License-Identifier: Apache-2.0 */
/* layout.c - the sizes, alignments and field offsets of the structs that
 * examples/rust-gateway/src/ffi.rs declares by hand, and the constants it
 * copies, as the C compiler sees them in the public headers.  Its output is
 * compared line for line with `rust-gateway --print-layout`
 * (tests/rust/rust_gateway_test.sh). */
#include <stdalign.h>
#include <stddef.h>
#include <stdio.h>

#include "ringsteer/gateway_core.h"
#include "ringsteer/gateway_store.h"
#include "ringsteer/proto.h"
#include "ringsteer/store.h"
#include "ringsteer/token.h"

#define ST(t) printf("%s size %zu align %zu\n", #t, sizeof(struct t), alignof(struct t))
#define F(t, f) printf("%s.%s %zu\n", #t, #f, offsetof(struct t, f))
#define C(c) printf("const %s %lld\n", #c, (long long)(c))

int main(void)
{
	ST(rs_secret);
	F(rs_secret, key); F(rs_secret, len);
	ST(rs_store_options);
	F(rs_store_options, ttl_ms); F(rs_store_options, reservation_ms); F(rs_store_options, busy_timeout_ms);
	F(rs_store_options, no_create); F(rs_store_options, read_only);
	ST(rs_drain_config);
	F(rs_drain_config, pace_ms); F(rs_drain_config, budget_ms); F(rs_drain_config, membership_wait_ms);
	F(rs_drain_config, max_in_flight);
	ST(rs_gw_time);
	F(rs_gw_time, mono_ms); F(rs_gw_time, wall_ms);
	ST(rs_gw_core_config);
	F(rs_gw_core_config, id); F(rs_gw_core_config, advertise_peer); F(rs_gw_core_config, secret);
	F(rs_gw_core_config, heartbeat_ms); F(rs_gw_core_config, ttl_ms); F(rs_gw_core_config, hello_timeout_ms);
	F(rs_gw_core_config, handoff_timeout_ms); F(rs_gw_core_config, home_grace_ms);
	F(rs_gw_core_config, token_ttl_s); F(rs_gw_core_config, max_frame); F(rs_gw_core_config, max_sessions);
	F(rs_gw_core_config, limit_retry_ms); F(rs_gw_core_config, no_placement); F(rs_gw_core_config, registered);
	F(rs_gw_core_config, drain); F(rs_gw_core_config, store_queue_max); F(rs_gw_core_config, admit_deadline_ms);
	F(rs_gw_core_config, admit_batch_max);
	ST(rs_gw_callbacks);
	F(rs_gw_callbacks, send); F(rs_gw_callbacks, close); F(rs_gw_callbacks, resume); F(rs_gw_callbacks, store);
	F(rs_gw_callbacks, peer_is); F(rs_gw_callbacks, log); F(rs_gw_callbacks, exit);
	ST(rs_gw_counters);
	F(rs_gw_counters, accepts); F(rs_gw_counters, redirects_placement); F(rs_gw_counters, redirects_drain);
	F(rs_gw_counters, redirects_deferred); F(rs_gw_counters, over_cap_accepts); F(rs_gw_counters, stays);
	F(rs_gw_counters, reserved); F(rs_gw_counters, owner_fallbacks); F(rs_gw_counters, rejects);
	F(rs_gw_counters, store_errors); F(rs_gw_counters, superseded_closed); F(rs_gw_counters, handoffs_completed);
	F(rs_gw_counters, handoffs_timed_out); F(rs_gw_counters, handoffs_abandoned);
	F(rs_gw_counters, degraded_accepts); F(rs_gw_counters, claims_recorded); F(rs_gw_counters, claims_superseded);
	F(rs_gw_counters, store_batches); F(rs_gw_counters, store_batched); F(rs_gw_counters, store_cancelled);
	F(rs_gw_counters, store_statements); F(rs_gw_counters, refresh_limited);
	F(rs_gw_counters, sandboxes_coalesced); F(rs_gw_counters, store_queue_full);
	F(rs_gw_counters, store_errors_kind); F(rs_gw_counters, arrivals_expired);
	F(rs_gw_counters, arrivals_timed_out); F(rs_gw_counters, arrivals_shed);
	F(rs_gw_counters, sandboxes_unchanged);
	ST(rs_gw_gauges);
	F(rs_gw_gauges, supervisors); F(rs_gw_gauges, busiest); F(rs_gw_gauges, unrecorded);
	F(rs_gw_gauges, deferred_pending); F(rs_gw_gauges, store_queue); F(rs_gw_gauges, store_up);
	F(rs_gw_gauges, registered); F(rs_gw_gauges, draining); F(rs_gw_gauges, stopping);
	F(rs_gw_gauges, store_clock_skew_ms);
	C(RS_SECRET_MAX); C(RS_FRAME_MAX); C(RS_FRAME_HEADER); C(RS_GOODBYE_SHUTDOWN); C(RS_GATEWAY_SERVING);
	C(RS_GW_LINK_FLUSHED); C(RS_GW_LINK_LOST); C(RS_GW_LINK_IDLE); C(RS_GW_REJECT_COUNT);
	C(RS_STORE_ERROR_KINDS);
	return 0;
}
