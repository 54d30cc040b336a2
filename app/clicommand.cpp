// SPDX-License-Identifier: MIT
#include "app/clicommand.h"

#include "app/clijson.h"
#include "core/io/loader.h"
#include "core/util/loaderror.h"
#include "core/util/textlayout.h"

#include <filesystem>
#include <iostream>

namespace headroom::cli {

std::shared_ptr<const LoadedTrace> loadTrace(const std::string& path)
{
    std::error_code ec;
    if (!std::filesystem::exists(path, ec))
        throw CommandError(path +
                           ": no such file; expected a PyTorch memory snapshot (.pickle), a trace or a .hrt file");
    try {
        return Loader::load(path);
    } catch (const LoadError& e) {
        throw CommandError(e.what());
    } catch (const std::bad_alloc&) {
        throw CommandError(path + ": out of memory while loading");
    }
}

TraceSource directSource()
{
    return [](const std::string& path) { return loadTrace(path); };
}

int emit(const CommandOutput& out, bool json)
{
    if (json)
        printJson(out.json);
    else
        std::cout << wrapLines(out.text);
    return out.exitCode;
}

int runAndEmit(const std::function<CommandOutput()>& produce, bool json)
{
    try {
        return emit(produce(), json);
    } catch (const CommandError& e) {
        std::cerr << "headroom-cli: " << e.what() << "\n";
        return 2;
    }
}

size_t devicePosition(const LoadedTrace& trace, int index, const std::string& flag)
{
    const size_t n = trace.snapshot.devices.size();
    if (index < 0 || size_t(index) >= n)
        throw CommandError(flag + ": " + trace.snapshot.path + " has " + std::to_string(n) +
                           " device(s); expected 0.." + std::to_string(n == 0 ? 0 : n - 1));
    return size_t(index);
}

} // namespace headroom::cli
