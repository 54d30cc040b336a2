// SPDX-License-Identifier: MIT
#pragma once

// JSON and text renderings of projections and ladders (`headroom-cli whatif` / `ladder`).

#include "core/whatif/calibration/whatifcalibration.h"
#include "core/whatif/ladder/whatifladder.h"

#include <nlohmann/json.hpp>
#include <string>

namespace headroom {

/// `peak_bytes`, `peak_low_bytes`, `peak_high_bytes`, `peak_phase`, `fits`, `step_time_s`,
/// `tokens_per_s`, `measured` (each value with how it is known), `phases` (component -> bytes)
/// and the details (provenance, band, step-time items, assumptions).
nlohmann::json projectionJson(const Projection& p, const std::vector<MeasuredItem>& measured,
                              const WhatIfConstants& k, const DeviceSpec& device);
/// `rungs` (levers, peak_bytes, peak_high_bytes, fits, step_time_s, currencies) and `first_fit`.
nlohmann::json ladderJson(const Ladder& l);

std::string projectionText(const Projection& p, const std::vector<MeasuredItem>& measured, const DeviceSpec& device);

/// Whether a run at another sequence length settles an ambiguity (one of its readings is
/// quadratic in s); else a run at another micro-batch does. Every frontend words it.
bool settledBySequence(const ProjectedAmbiguity& a);
std::string ladderText(const Ladder& l);

/// "Tight by allocated memory, but the projected run's requests through the caching allocator
/// fail at event 18996: ..." when the projection fits and its simulated allocator does not (the
/// peak and the allocator verdict speak of the same run); empty otherwise.
std::string reservedVerdictText(const Projection& p);

/// A count of the configuration as text: "unknown" when the trace does not tell it (0).
std::string countText(int value);
/// What follows a projected lever's value `shown` where the measured run's value behind it is
/// not known: " (not measured: the trace does not tell it)" when the calibration could not
/// read it (such a lever is locked, so the value is the one projected in its place),
/// " (assumed)" when it assumed `shown`; "" when it was read or stated, or the lever moved
/// off the assumption. So the configuration line never states what the measured line calls
/// unknown.
std::string assumedSuffix(const std::vector<MeasuredItem>& measured, std::string_view key, std::string_view shown);
/// Whether tokens/s and the effective batch mean anything: the micro-batch, the sequence and
/// the devices are known (a trace alone tells none of them), and the micro-batch is a count,
/// not a ratio of the measured run.
bool throughputKnown(const Projection& p);
/// "0.123 s (x1.05), 4096 tokens/s", or why the step time is unknown: every frontend's words.
std::string stepTimeText(const Projection& p);
/// "0.123 s/step" or "step time unknown", a rung's.
std::string rungTimeText(const Projection& p);
/// "lever", "allocator_setting", "batch_budget" (JSON).
std::string_view rungKindName(RungKind k);

} // namespace headroom
