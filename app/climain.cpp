// SPDX-License-Identifier: MIT
// headroom-cli: the headless front end of core/ (summaries for scripts, CI and servers).
#include "core/loader.h"
#include "core/loaderror.h"
#include "core/summary.h"

#include <CLI/CLI.hpp>

#include <cstdio>
#include <iostream>

int main(int argc, char** argv)
{
    CLI::App app{"headroom-cli: inspect PyTorch memory snapshots without a GUI"};
    app.require_subcommand(0, 1);
    bool version = false;
    app.add_flag("--version", version, "Print the version and exit");

    std::string file;
    bool json = false;
    auto* summary = app.add_subcommand("summary", "Print per-device totals, the replayed peak and OOM events");
    summary->add_option("FILE", file, "Snapshot pickle (.pickle, .pickle.gz, _memory_viz .html)")->required();
    summary->add_flag("--json", json, "Machine-readable JSON output");

    try {
        app.parse(argc, argv);
    } catch (const CLI::ParseError& e) {
        return app.exit(e) == 0 ? 0 : 2;
    }
    if (version) {
        std::cout << "headroom-cli " << HEADROOM_VERSION << " (commit " << HEADROOM_GIT_COMMIT << ")\n";
        return 0;
    }
    if (!summary->parsed()) {
        std::cout << app.help();
        return 0;
    }
    try {
        auto trace = headroom::Loader::load(file);
        if (json)
            std::cout << headroom::summaryJson(*trace).dump(1) << "\n";
        else
            std::cout << headroom::summaryText(*trace);
        return 0;
    } catch (const headroom::LoadError& e) {
        std::cerr << "headroom-cli: " << e.what() << "\n";
        return 2;
    } catch (const std::bad_alloc&) {
        std::cerr << "headroom-cli: " << file << ": out of memory while loading\n";
        return 2;
    }
}
