// SPDX-License-Identifier: MIT
// libFuzzer harness: the JSON importers (snapshot as JSON, profiler memory timelines raw and
// [times, sizes], Chrome traces) through the Loader, which picks one by content, then the
// replay, summary and analysis. Seeds: small JSON files of each kind.
#include "tests/fuzz/fuzz_common.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size)
{
    headroom::fuzz::loadAndSummarise(data, size);
    return 0;
}
