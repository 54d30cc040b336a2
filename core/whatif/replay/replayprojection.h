// SPDX-License-Identifier: MIT
#pragma once

// The replay's part of a projection (docs/whatif-model.md, "Two engines"): which targets the
// measured history can be transformed to, and the allocated peak, band, ambiguities and notes
// of that replay, laid over the terms' projection.

#include "core/whatif/vocabulary/whatifstate.h"

namespace headroom {

/// When the replay projects `t` (micro-batch, sequence, full checkpointing, pure precision,
/// optimizer, accumulation; the rest as measured), its allocated peak and band replace the
/// terms' in `pr`; fragmentation and memory outside the allocator stay the terms' own.
void applyReplay(Projection& pr, const WhatIfBaseline& base, const LeverConfig& t, const WhatIfConstants& k);

} // namespace headroom
