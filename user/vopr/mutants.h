/* SPDX-License-Identifier: Apache-2.0 */
/* mutants.h - the admission function a run's store decides with: the
 * library's own, or a deliberately broken wrapper of it (vopr.h). */
#ifndef RS_VOPR_MUTANTS_H
#define RS_VOPR_MUTANTS_H

#include "vopr/ledger.h"
#include "vopr/vopr.h"

ledger_admit_fn mutant_admit(enum vopr_mutant m);

#endif
