// SPDX-License-Identifier: MIT
#pragma once

#include "core/model/snapshotmodel.h"

#include <nlohmann/json.hpp>

namespace headroom {

/// Chrome/Kineto traces (`export_chrome_trace`, `tensorboard_trace_handler`) with `[memory]`
/// and `[OutOfMemory]` instant events (docs/formats.md, "Chrome traces"), every argument variant from
/// PyTorch 1.9 (Bytes only) to 2.x (Addr, Total Allocated/Reserved, fractional `ts`,
/// `baseTimeNanoseconds`).
///
/// One DeviceData per (Device Type, Device Id): GPUs keep their id, host memory (type 0)
/// becomes device -1 with type "cpu". Events are sorted by time (then `Ev Idx`, then
/// file order). With `Total Allocated` on every event the curve is the file's totals
/// (`TraceEvents::totalAllocated`); without it the curve is the running sum of `Bytes`
/// relative to the start of the window, raised just enough never to go below zero, and
/// the device is marked `relativeCurve`. Without `Addr` frees are paired with the latest
/// live allocation of the same size (synthetic addresses). `user_annotation` ranges,
/// `ProfilerStep#N`, `Optimizer.step#…`, `Optimizer.zero_grad#…` and
/// `autograd::engine::evaluate_function` become Snapshot::timeWindows.
class ChromeTraceImporter {
public:
    /// True for `{"traceEvents": [...]}` or a bare array of events with "ph".
    static bool accepts(const nlohmann::json& root);
    /// For the streaming JSON builder: false for a trace event (an object with "ph") the
    /// importer does not use (kernels, flows, ops...), so a 200k-event trace costs little memory.
    static bool keepEvent(const nlohmann::json& object);
    static void import(const nlohmann::json& root, Snapshot& snapshot);
};

} // namespace headroom
