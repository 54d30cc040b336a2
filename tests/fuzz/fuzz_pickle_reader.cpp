// SPDX-License-Identifier: MIT
// libFuzzer harness: the safe pickle reader alone (core/picklereader.cpp), no importer.
#include "core/frametable.h"
#include "core/loaderror.h"
#include "core/pickledocument.h"
#include "core/picklereader.h"

#include <cstddef>
#include <cstdint>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size)
{
    headroom::FrameTable frames;
    headroom::PickleDocument doc(frames);
    try {
        headroom::PickleReader::parse(doc, data, size, "fuzz-input", {});
        // Walk the result the way the importer does, to touch every stored value.
        (void)doc.root();
        (void)doc.protocol();
    } catch (const headroom::LoadError&) {
    }
    return 0;
}
