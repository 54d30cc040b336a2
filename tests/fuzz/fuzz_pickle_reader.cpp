// SPDX-License-Identifier: MIT
// libFuzzer harness: the safe pickle reader alone (core/io/picklereader.cpp), no importer.
#include "core/io/pickledocument.h"
#include "core/io/picklereader.h"
#include "core/model/frametable.h"
#include "core/util/loaderror.h"

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
