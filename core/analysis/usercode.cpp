// SPDX-License-Identifier: MIT
#include "core/analysis/usercode.h"

namespace headroom {

bool isLibraryFile(std::string_view file)
{
    if (file.find("/site-packages/") != std::string_view::npos ||
        file.find("/dist-packages/") != std::string_view::npos)
        return true;
    if (file.rfind("<frozen", 0) == 0 || file.rfind("<string>", 0) == 0)
        return true;
    // The standard library: .../lib/python3.11/threading.py, .../lib/python3.11/concurrent/...
    const std::string_view lib = "/lib/python";
    const size_t at = file.find(lib);
    return at != std::string_view::npos && at + lib.size() < file.size() && file[at + lib.size()] >= '0' &&
           file[at + lib.size()] <= '9';
}

uint32_t userCodeFrame(const FrameTable& ft, uint32_t stack)
{
    uint32_t innermostPython = kNoFrame;
    for (uint32_t f : ft.stack(stack)) {
        if (!ft.isPythonFrame(f))
            continue;
        if (!isLibraryFile(ft.strings().get(ft.frame(f).file)))
            return f;
        if (innermostPython == kNoFrame)
            innermostPython = f;
    }
    if (innermostPython != kNoFrame)
        return innermostPython;
    const auto top = ft.topFrames(stack, 1);
    return top.empty() ? kNoFrame : top.front();
}

} // namespace headroom
