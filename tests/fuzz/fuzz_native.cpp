// SPDX-License-Identifier: MIT
// libFuzzer harness: the Headroom trace (.hrt) reader. The magic is forced so every input
// reaches NativeFormat::read; then the replay, summary and analysis run on what it built.
#include "core/native/nativeformat.h"
#include "tests/fuzz/fuzz_common.h"

#include <algorithm>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size)
{
    constexpr size_t kMagic = sizeof(headroom::NativeFormat::kMagic);
    std::vector<uint8_t> bytes(data, data + size);
    if (bytes.size() < kMagic)
        bytes.resize(kMagic);
    std::copy(std::begin(headroom::NativeFormat::kMagic), std::end(headroom::NativeFormat::kMagic), bytes.begin());
    headroom::fuzz::loadAndSummarise(bytes.data(), bytes.size());
    return 0;
}
