// SPDX-License-Identifier: MIT
#include "app/cliformats.h"

#include "app/clijson.h"

#include "core/analysis/ranktable.h"
#include "core/analysis/summary.h"
#include "core/io/loader.h"
#include "core/native/nativeformat.h"
#include "core/util/atomicfile.h"
#include "core/util/loaderror.h"

#include <algorithm>
#include <filesystem>
#include <iostream>

namespace headroom::cli {

namespace fs = std::filesystem;

int multiSummary(const std::vector<std::string>& inputs, bool json)
{
    std::vector<std::string> files;
    for (const std::string& in : inputs) {
        std::error_code ec;
        if (fs::is_directory(in, ec)) {
            std::vector<std::string> inDir;
            for (const auto& e : fs::directory_iterator(in, ec))
                if (e.is_regular_file() && e.path().filename().string()[0] != '.')
                    inDir.push_back(e.path().string());
            std::sort(inDir.begin(), inDir.end(), [](const std::string& a, const std::string& b) {
                const int ra = RankTable::rankFromFileName(a), rb = RankTable::rankFromFileName(b);
                return ra != rb ? ra < rb : a < b;
            });
            if (inDir.empty()) {
                std::cerr << "headroom-cli: " << in << ": the directory holds no files\n";
                return 2;
            }
            files.insert(files.end(), inDir.begin(), inDir.end());
        } else {
            files.push_back(in);
        }
    }
    std::vector<std::shared_ptr<const LoadedTrace>> traces;
    try {
        for (const std::string& f : files)
            traces.push_back(Loader::load(f));
    } catch (const LoadError& e) {
        std::cerr << "headroom-cli: " << e.what() << "\n";
        return 2;
    } catch (const std::bad_alloc&) {
        std::cerr << "headroom-cli: out of memory while loading\n";
        return 2;
    }
    const RankTable table(traces);
    if (json) {
        nlohmann::json out = table.toJson();
        out["files"] = nlohmann::json::array();
        for (const auto& t : traces)
            out["files"].push_back(summaryJson(*t));
        printJson(std::move(out));
    } else {
        std::cout << files.size() << " files\n\n" << table.toText();
    }
    return 0;
}

int convert(const std::string& in, const std::string& out, bool uncompressed)
{
    try {
        auto trace = Loader::load(in);
        NativeFormat::WriteOptions opt;
        opt.compress = !uncompressed;
        NativeFormat::write(trace->snapshot, out, opt);
        std::error_code ec;
        const auto size = fs::file_size(out, ec);
        std::cout << "wrote " << out << " (" << size << " bytes, " << trace->snapshot.devices.size()
                  << " devices) from " << in << "\n";
        return 0;
    } catch (const LoadError& e) {
        std::cerr << "headroom-cli: " << e.what() << "\n";
        return 2;
    } catch (const SaveError& e) {
        std::cerr << "headroom-cli: " << e.what() << "\n";
        return 2;
    } catch (const std::bad_alloc&) {
        std::cerr << "headroom-cli: " << in << ": out of memory\n";
        return 2;
    }
}

} // namespace headroom::cli
