/* SPDX-License-Identifier: Apache-2.0 */
/* bins.c - balls into bins, the textbook check on the simulator's random
 * numbers and on the "power of two choices" intuition: n balls into n bins,
 * each ball into the least loaded of d uniform choices.  The maximum load is
 * about ln n / ln ln n for d = 1 and ln ln n / ln d + O(1) for d >= 2
 * (Azar, Broder, Karlin, Upfal 1994). */
#include <assert.h>
#include <string.h>

#include "sim.h"

uint32_t sim_bins_max_load(struct sim_rng *r, uint32_t n, uint32_t d, uint32_t *loads)
{
	uint32_t max = 0;

	assert(n >= 1 && d >= 1);
	memset(loads, 0, (size_t)n * sizeof(*loads));
	for (uint32_t ball = 0; ball < n; ball++) {
		uint32_t best = sim_rng_below(r, n);

		for (uint32_t k = 1; k < d; k++) {
			uint32_t other = sim_rng_below(r, n);

			if (loads[other] < loads[best])
				best = other;
		}
		if (++loads[best] > max)
			max = loads[best];
	}
	return max;
}
