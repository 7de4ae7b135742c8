/* SPDX-License-Identifier: Apache-2.0 */
/* ctl_sim_json.h - `ringsteerctl sim --json`: the simulator's text tables
 * turned into one JSON document.  The simulator (user/sim/) only knows how
 * to print tables; rather than teach it a second output, its aligned text
 * is read back here, so the JSON holds exactly the figures the text shows,
 * rounded the same. */
#ifndef RS_CTL_SIM_JSON_H
#define RS_CTL_SIM_JSON_H

#include <stdio.h>

/* Writes the report text (as sim_run() prints it, not Markdown) as
 *   {"seed", "trials", "scenarios": [{"number", "title", "rows": [{"config",
 *   "gateways", "supervisors", "policy", "max", "mean", "max_over_mean",
 *   "spread", "peak", "moved", "handoffs"}]}], "bins": [{"n", "d1", "d2"}]}
 * (fill rows have no peak, moved, handoffs; bins is [] without the table).
 * text is modified.  Returns 0, -EPROTO when the text is not laid out as
 * expected (nothing is written then), -ENOMEM or -EIO. */
int ctl_sim_json(char *text, FILE *out);

#endif
