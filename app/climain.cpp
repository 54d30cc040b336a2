// SPDX-License-Identifier: MIT
// headroom-cli: the headless front end of core/ (summaries for scripts, CI and servers).
#include "app/clibudget.h"
#include "app/clicheck.h"
#include "app/clichecks.h"
#include "app/cliclassify.h"
#include "app/clicompare.h"
#include "app/climcp.h"
#include "app/clidoctor.h"
#include "app/cliformats.h"
#include "app/clijson.h"
#include "app/clireplay.h"
#include "app/clistate.h"
#include "app/cliwhatif.h"
#include "core/analysis/summary.h"
#include "core/io/loader.h"
#include "core/report/analysisreport.h"
#include "core/util/loaderror.h"
#include "headroom_version.h" // generated at build time: HEADROOM_GIT_COMMIT

#include <CLI/CLI.hpp>

#include "core/util/textlayout.h"
#include "core/util/units.h"

#include <cstdio>
#include <filesystem>
#include <optional>
#include <iostream>

int main(int argc, char** argv)
{
    CLI::App app{"headroom-cli: inspect PyTorch memory snapshots without a GUI"};
    app.require_subcommand(0, 1);
    bool version = false;
    app.add_flag("--version", version, "Print the version, the commit and the Qt version of the GUI, and exit");

    std::vector<std::string> files;
    bool json = false;
    auto* summary = app.add_subcommand("summary", "Print per-device totals, the replayed peak and OOM events");
    summary->add_option("FILE", files,
                        "Snapshot (.pickle, .json, .html), profiler timeline (.raw.json.gz, .json), Chrome trace "
                        "(.pt.trace.json[.gz]) or .hrt; several files or a directory print a per-rank table")
        ->required();
    summary->add_flag("--json", json, "Machine-readable JSON output");

    std::string analyzeFile;
    bool analyzeJson = false, analyzeMarkdown = false, analyzeByModule = false;
    std::string capacityText, analyzeCategories;
    size_t analyzeTop = 10;
    auto* analyze = app.add_subcommand("analyze", "Phases, categories, the peak's anatomy, fragmentation and a diagnosis");
    analyze->add_option("FILE", analyzeFile, "Snapshot file")->required();
    auto* analyzeJsonFlag = analyze->add_flag("--json", analyzeJson, "Machine-readable JSON output");
    auto* analyzeMarkdownFlag = analyze->add_flag("--markdown", analyzeMarkdown, "A postmortem section in Markdown (the GUI's Export Postmortem text)")
        ->excludes(analyzeJsonFlag);
    analyze->add_option("--top", analyzeTop, "Rows of the code alive at the peak (default 10)")->check(headroom::cli::positiveWhole());
    analyze->add_flag("--by-module", analyzeByModule,
                      "Also what is alive at the peak by module: the recorder's module names, else the module "
                      "frames of the stacks (in --json always: groups_at_peak.by_module)");
    analyze->add_option("--capacity", capacityText, "Device capacity, e.g. 80GiB, 24GB or a byte count");
    analyze->add_option("--categories", analyzeCategories,
                        "Your own categories: a JSON rules file (regular expressions over the frames' function and "
                        "file names and user_metadata; first match wins; docs/categories-and-phases.md); adds what "
                        "is alive at the peak by them (in --json: groups_at_peak.by_user_category)")
        ->excludes(analyzeMarkdownFlag);

    std::string convertIn, convertOut;
    bool convertRaw = false;
    auto* convert = app.add_subcommand("convert", "Save any supported input as a Headroom trace (.hrt)");
    convert->add_option("IN", convertIn, "Input file (any format summary accepts)")->required();
    convert->add_option("OUT", convertOut, "Output .hrt file (written atomically)")->required();
    convert->add_flag("--uncompressed", convertRaw, "Store sections without zstd (larger, for debugging)");

    headroom::cli::WhatIfCommands whatIf;
    whatIf.add(app);
    headroom::cli::StateCommand state;
    state.add(app);
    headroom::cli::CheckCommand check;
    check.add(app);
    headroom::cli::DoctorCommand doctor;
    doctor.add(app);
    headroom::cli::ReplayCommand replay;
    replay.add(app);
    headroom::cli::ClassifyCommand classify;
    classify.add(app);
    headroom::cli::CompareCommand compare;
    compare.add(app);
    headroom::cli::McpCommand mcp;
    mcp.add(app);
    headroom::cli::BudgetCommand budget;
    budget.add(app);

    try {
        app.parse(argc, argv);
    } catch (const CLI::ParseError& e) {
        return app.exit(e) == 0 ? 0 : 2;
    }
    if (version) {
        std::cout << "headroom-cli " << HEADROOM_VERSION << " (commit " << HEADROOM_GIT_COMMIT
#ifdef HEADROOM_GUI_QT_VERSION
                  << "; core only, does not link Qt; the GUI is built with Qt " << HEADROOM_GUI_QT_VERSION
#else
                  << "; core only, does not link Qt; built without the GUI"
#endif
                  << ")\n";
        return 0;
    }
    if (analyze->parsed()) {
        std::optional<int64_t> capacity;
        if (!capacityText.empty()) {
            capacity = headroom::parseByteSize(capacityText);
            if (!capacity) {
                std::cerr << "headroom-cli: --capacity: expected a size such as 80GiB, 24GB or 1073741824, got '"
                          << capacityText << "'\n";
                return 2;
            }
        }
        std::optional<headroom::UserCategories> categories;
        try {
            if (!analyzeCategories.empty())
                categories = headroom::UserCategories::load(analyzeCategories);
        } catch (const headroom::UserCategoriesError& e) {
            std::cerr << "headroom-cli: --categories: " << e.what() << "\n";
            return 2;
        }
        const headroom::UserCategories* rules = categories ? &*categories : nullptr;
        try {
            auto trace = headroom::Loader::load(analyzeFile);
            if (analyzeJson)
                headroom::cli::printJson(headroom::analysisJson(*trace, capacity, analyzeTop, rules));
            else if (analyzeMarkdown)
                std::cout << headroom::analysisMarkdown(*trace, capacity, analyzeTop);
            else
                std::cout << headroom::wrapLines(
                    headroom::analysisText(*trace, capacity, analyzeTop, analyzeByModule, rules));
            return 0;
        } catch (const headroom::LoadError& e) {
            std::cerr << "headroom-cli: " << e.what() << "\n";
            return 2;
        } catch (const std::bad_alloc&) {
            std::cerr << "headroom-cli: " << analyzeFile << ": out of memory while loading\n";
            return 2;
        }
    }
    if (state.parsed())
        return state.run();
    if (check.parsed())
        return check.run();
    if (doctor.parsed())
        return doctor.run();
    if (replay.parsed())
        return replay.run();
    if (classify.parsed())
        return classify.run();
    if (compare.parsed())
        return compare.run();
    if (mcp.parsed())
        return mcp.run();
    if (budget.parsed())
        return budget.run();
    if (whatIf.parsed())
        return whatIf.run();
    if (convert->parsed())
        return headroom::cli::convert(convertIn, convertOut, convertRaw);
    if (!summary->parsed()) {
        std::cout << app.help();
        return 0;
    }
    if (files.size() != 1 || std::filesystem::is_directory(files[0]))
        return headroom::cli::multiSummary(files, json);
    const std::string& file = files[0];
    try {
        auto trace = headroom::Loader::load(file);
        if (json)
            headroom::cli::printJson(headroom::summaryJson(*trace));
        else
            std::cout << headroom::wrapLines(headroom::summaryText(*trace));
        return 0;
    } catch (const headroom::LoadError& e) {
        std::cerr << "headroom-cli: " << e.what() << "\n";
        return 2;
    } catch (const std::bad_alloc&) {
        std::cerr << "headroom-cli: " << file << ": out of memory while loading\n";
        return 2;
    }
}
