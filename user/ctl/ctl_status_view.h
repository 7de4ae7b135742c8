/* SPDX-License-Identifier: Apache-2.0 */
/* ctl_status_view.h - how `ringsteerctl status` shows a fleet: an aligned
 * table with a bar per gateway and a key=value footer, or one JSON object. */
#ifndef RS_CTL_STATUS_VIEW_H
#define RS_CTL_STATUS_VIEW_H

#include <stdio.h>

#include "ctl_fleet.h"

/* Prints the table (header, one row per gateway: ID STATE SUPERVISORS
 * SANDBOXES BUSIEST and a bar of `width` columns for the largest count),
 * then the footer line:
 *   supervisors=S  serving=G  cap=C  max=X  min=Y  max-min=D  verdict=V
 * (cap, max, min and max-min are "-" when G = 0, V is even, uneven or none). */
void ctl_status_print_table(FILE *out, const struct ctl_fleet *f, unsigned width);

/* Prints the fleet as one JSON object on one line:
 * {"gateways": [{"id", "state", "live", "supervisors", "sandboxes",
 * "busiest_sandboxes"}...], "supervisors", "serving_gateways", "cap", "max",
 * "min", "spread", "even", "verdict"} (max, min and spread null when G = 0). */
void ctl_status_print_json(FILE *out, const struct ctl_fleet *f);

#endif
