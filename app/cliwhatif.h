// SPDX-License-Identifier: MIT
#pragma once

// `headroom-cli whatif` and `headroom-cli ladder`: the option plumbing of issue 6 §4.

#include <CLI/CLI.hpp>

#include <optional>
#include <string>
#include <vector>

namespace headroom::cli {

class WhatIfCommands {
public:
    /// Registers the two subcommands on `app`.
    void add(CLI::App& app);
    bool parsed() const;
    /// Runs whichever was parsed; returns the exit code (2 for bad input).
    int run();

private:
    struct Options {
        std::vector<std::string> files; ///< the first is calibrated on; the others refit it
        std::optional<int> microBatch, accum, seq, zero, devices;
        std::string checkpoint, precision, optimizer, offload, flashAttn, expandable;
        std::optional<double> loraFraction;
        std::string capacity, devicePreset;
        bool json = false;
        std::vector<int> measuredMicroBatch, measuredSeq; ///< one per FILE, in order
        std::optional<int> measuredDevices, measuredAccum;
        std::string measuredPrecision;
        std::string model;
        std::optional<int> layers, hidden, heads, ffn, vocab;
        std::optional<double> params;
        int deviceIndex = 0;
        std::string currencyOrder;
        int availableDevices = 1;
        std::string verify; ///< the run that followed: check the projection against it
    };
    void addCommon(CLI::App* cmd, Options& o, bool ladder);
    int runOne(const Options& o, bool ladder);

    CLI::App* m_whatif = nullptr;
    CLI::App* m_ladder = nullptr;
    Options m_w, m_l;
};

} // namespace headroom::cli
