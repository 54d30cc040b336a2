// SPDX-License-Identifier: MIT
// libFuzzer harness: pickle bytes through the whole Loader (reader, snapshot importer,
// replay) and the summary/analysis. Seeds: pickled snapshots (real and synthetic).
#include "tests/fuzz/fuzz_common.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size)
{
    headroom::fuzz::loadAndSummarise(data, size);
    return 0;
}
