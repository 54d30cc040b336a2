// SPDX-License-Identifier: MIT
// Shared by the libFuzzer harnesses (tests/fuzz/fuzz_*.cpp). Every harness must accept any
// byte string: bad input may only end in headroom::LoadError (or a clean success). Any
// other exception escapes to libFuzzer, which reports it as a crash, as it does for
// ASan/UBSan findings, leaks, timeouts and allocations over -malloc_limit_mb.
#pragma once

#include "core/analysis/summary.h"
#include "core/io/loader.h"
#include "core/report/analysisreport.h"
#include "core/util/loaderror.h"

#include <optional>

#include <cstddef>
#include <cstdint>
#include <vector>

namespace headroom::fuzz {

/// Decompressed data is capped far below the product default (16 GiB) so a bomb the
/// fuzzer builds ends in the clear "refusing a possible compression bomb" error instead
/// of tripping libFuzzer's memory limit.
inline constexpr uint64_t kMaxInflated = 64ull << 20;

/// The whole product path on bytes: format detection, transport decoding, the reader or
/// importer, the replay, then the summary and analysis the CLI prints.
inline void loadAndSummarise(const uint8_t* data, size_t size)
{
    LoadOptions opt;
    opt.maxInflated = kMaxInflated;
    try {
        auto trace = Loader::loadBytes("fuzz-input", std::vector<uint8_t>(data, data + size), opt);
        (void)summaryJson(*trace);
        (void)analysisJson(*trace, std::nullopt);
    } catch (const LoadError&) {
        // The expected outcome for most inputs.
    }
}

} // namespace headroom::fuzz
