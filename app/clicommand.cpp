// SPDX-License-Identifier: MIT
#include "app/clicommand.h"

#include "app/clijson.h"
#include "core/analysis/summary.h"
#include "core/io/loader.h"
#include "core/util/loaderror.h"
#include "core/util/textlayout.h"

#include <cmath>
#include <filesystem>
#include <iostream>

namespace headroom::cli {

namespace {

/// "5%", "5", "12.5 %" -> 0.05, 0.05, 0.125; nullopt for anything else or a negative value.
std::optional<double> parsePercent(const std::string& text)
{
    std::string t;
    for (char c : text)
        if (c != ' ')
            t += c;
    if (!t.empty() && t.back() == '%')
        t.pop_back();
    if (t.empty() || t.find_first_not_of("0123456789.") != std::string::npos)
        return std::nullopt;
    try {
        size_t used = 0;
        const double v = std::stod(t, &used);
        if (used != t.size() || !std::isfinite(v) || v < 0)
            return std::nullopt;
        return v / 100.0;
    } catch (...) {
        return std::nullopt;
    }
}

} // namespace

/// `max`: the first fraction refused (1.0 for a margin, which must leave some capacity).
double percentOption(const std::string& flag, const std::string& text, double max, const char* example)
{
    const auto v = parsePercent(text);
    if (!v || *v >= max)
        throw CommandError(flag + ": expected a percentage such as " + example + ", got '" + text + "'");
    return *v;
}


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

size_t pickDevice(const LoadedTrace& t, std::optional<int> ordinal, const std::string& path)
{
    const auto& devs = t.snapshot.devices;
    if (devs.empty())
        throw CommandError(path + ": no devices; expected a snapshot or trace with at least one device");
    if (ordinal) {
        std::string list;
        for (size_t i = 0; i < devs.size(); ++i) {
            if (devs[i].device == *ordinal)
                return i;
            list += (list.empty() ? "" : ", ") + std::to_string(devs[i].device);
        }
        throw CommandError(path + ": no device " + std::to_string(*ordinal) + " (devices: " + list + ")");
    }
    // The device every view opens on (core's choice): the OOM's, else the highest peak's.
    const int primary = primaryDeviceIndex(t);
    return primary >= 0 ? size_t(primary) : 0;
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
