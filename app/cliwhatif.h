// SPDX-License-Identifier: MIT
#pragma once

// `headroom-cli whatif` and `headroom-cli ladder`: the levers as options, the projection or the
// ladder as text or JSON.

#include "app/clicommand.h"
#include "core/whatif/calibration/whatifcalibration.h"

#include <CLI/CLI.hpp>

#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace headroom::cli {

/// The options of `whatif` and `ladder` (and of MCP's tools of the same names).
struct WhatIfRequest {
    std::vector<std::string> files; ///< the first is calibrated on; the others refit it
    std::optional<int> microBatch, accum, seq, zero, devices;
    std::string checkpoint, precision, optimizer, offload, flashAttn, expandable;
    std::optional<double> loraFraction;
    std::string capacity, devicePreset;
    std::string margin; ///< share of the capacity a fit keeps free; empty: the constants' (10%)
    std::vector<int> measuredMicroBatch, measuredSeq; ///< one per FILE, in order
    std::optional<int> measuredDevices, measuredAccum;
    std::string measuredPrecision;
    std::string model;
    std::optional<int> layers, hidden, heads, ffn, vocab;
    std::optional<double> params;
    std::optional<int> deviceIndex; ///< position; default: the one the GUI opens (an OOM's, else the highest peak)
    /// `--device`: the device ordinal, as in check, compare, replay and state; a speed preset
    /// name there is the old spelling of --speeds (taken, with a note on stderr).
    std::string device;
    std::string currencyOrder;
    int availableDevices = 1;
    std::string verify; ///< the run that followed: check the projection against it
};

/// How runWhatIf calibrates on a file's device: empty, it calibrates each time (headroom-cli);
/// the MCP server passes one that keeps what it calibrated.
using Calibrator =
    std::function<Calibration(const std::string& path, size_t deviceIndex, const StatedConfig&, const ModelDims&)>;

/// The projection (or, with `ladder`, the ladder) of `r`: the JSON of --json and of MCP.
CommandOutput runWhatIf(const WhatIfRequest& r, bool ladder, const TraceSource& source,
                        const Calibrator& calibrator = {});

class WhatIfCommands {
public:
    /// Registers the two subcommands on `app`.
    void add(CLI::App& app);
    bool parsed() const;
    /// Runs whichever was parsed; returns the exit code (2 for bad input).
    int run();

private:
    struct Options : WhatIfRequest {
        bool json = false;
    };
    void addCommon(CLI::App* cmd, Options& o, bool ladder);

    CLI::App* m_whatif = nullptr;
    CLI::App* m_ladder = nullptr;
    Options m_w, m_l;
};

} // namespace headroom::cli
