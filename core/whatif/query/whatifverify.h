// SPDX-License-Identifier: MIT
#pragma once

// Closing a postmortem: predicted, applied, measured. The projection made from one run
// (BEFORE) for the configuration of the run that followed (AFTER), against AFTER's measured
// peak, term by term, so that the term that was off is named.

#include "core/replay/loadedtrace.h"
#include "core/whatif/calibration/whatifcalibration.h"
#include "core/whatif/projection/whatifprojection.h"

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

namespace headroom {

struct TermCheck {
    std::string name;        ///< a component of the projection ("activations_linear", ...)
    double projected = 0;    ///< bytes, from BEFORE
    double measured = 0;     ///< bytes, AFTER's own reading at the same point of its step
};

struct Verification {
    Projection projection;   ///< BEFORE projected to the target configuration
    double measuredPeak = 0; ///< AFTER's peak allocated on the device
    double error = 0;        ///< of the projected peak allocated, relative to the measured
    bool bandHolds = false;  ///< the projected allocated band holds the measurement
    StepPhase phase = StepPhase::StartOfBackward; ///< where the terms are compared (the projection's peak)
    std::vector<TermCheck> terms; ///< largest absolute difference first
    std::string calibrationError; ///< AFTER could not be read term by term (the totals still compare)
};

/// What AFTER's file tells about its configuration, applied to the levers `given` leaves
/// as they were measured in BEFORE (`moved` says which the user set).
struct LeverMask {
    bool microBatch = false, accum = false, seq = false, precision = false, optimizer = false, devices = false,
         checkpoint = false;
};
LeverConfig configOfAfter(const LeverConfig& given, const LeverMask& moved, const LoadedTrace& after, size_t device);

Verification verifyProjection(const WhatIfBaseline& before, const LeverConfig& target, const WhatIfConstants& k,
                              const DeviceSpec& device, const LoadedTrace& after, size_t afterDevice);

/// `whatif --verify --json`: projected_peak_bytes, measured_peak_bytes, error, band_holds,
/// phase, terms, most_off_term (docs/cli-json.md).
nlohmann::json verificationJson(const Verification& v);
/// The text of `whatif --verify`: the totals, then the terms, the most off first.
std::string verificationText(const Verification& v);

} // namespace headroom
