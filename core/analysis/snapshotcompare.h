// SPDX-License-Identifier: MIT
#pragma once

#include "core/analysis/livegroups.h"
#include "core/analysis/memoryanalysis.h"
#include "core/replay/loadedtrace.h"

#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace headroom {

/// One side of a comparison: a device of a loaded file and its analysis.
struct CompareSide {
    const LoadedTrace* trace = nullptr;
    size_t deviceIndex = 0;
    const DeviceAnalysis* analysis = nullptr;
};

/// Allocations alive at the peak with the same signature (the innermost Python frame, else
/// the innermost frame that is not allocator noise, and the size): how many each side holds. Frames are compared as text,
/// so two files' frame tables need not agree.
struct SignatureDiff {
    std::string frame; ///< "" when the allocations have no frames
    int64_t size = 0;
    int64_t countA = 0, countB = 0;
    int64_t bytesDelta() const { return (countB - countA) * size; }
};

/// One iteration of each run, aligned by position (iteration i of A beside iteration i of B).
struct IterationPair {
    int iteration = 0;
    int64_t peakA = -1, peakB = -1; ///< -1: that run has no such iteration
};

/// Bytes alive at each peak under one nn.Module forward (LiveGroups' module frames).
struct ModuleDiff {
    std::string forward;
    int64_t bytesA = 0, bytesB = 0;
    int64_t bytesDelta() const { return bytesB - bytesA; }
};

/// Bytes at each peak that one of the user's category rules claims (the last row: what none
/// does, named "(no rule)").
struct UserCategoryDiff {
    std::string name;
    int64_t bytesA = 0, bytesB = 0;
    int64_t bytesDelta() const { return bytesB - bytesA; }
};

/// Two snapshots side by side (before and after a fix, two ranks, two micro-batches): the
/// peaks, the category totals at each peak and their differences, and the allocations
/// live at one peak and not the other.
struct Comparison {
    int64_t peakA = 0, peakB = 0;
    int64_t reservedA = 0, reservedB = 0;
    bool reservedRecordedA = true, reservedRecordedB = true; ///< MemoryTimeline::reservedRecorded
    size_t iterationsA = 0, iterationsB = 0;
    size_t oomsA = 0, oomsB = 0;
    std::array<int64_t, kTensorCategoryCount> categoriesA{}, categoriesB{};
    std::array<int64_t, kPhaseCount> phasesA{}, phasesB{}; ///< by phase of birth, at each peak
    std::vector<IterationPair> iterations;
    /// Modules whose bytes at the peak differ, largest difference first.
    std::vector<ModuleDiff> modules;
    /// Signatures whose count differs, largest byte difference first.
    std::vector<SignatureDiff> differences;
    int64_t onlyInA = 0, onlyInB = 0; ///< bytes of those differences, per side
    /// With the user's categories: every rule in the file's order, then "(no rule)".
    std::vector<UserCategoryDiff> userCategories;

    static Comparison compute(const CompareSide& a, const CompareSide& b, size_t maxDifferences = 200,
                              const UserCategories* rules = nullptr);
};

} // namespace headroom
