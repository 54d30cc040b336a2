// SPDX-License-Identifier: MIT
#include "app/clicompare.h"
#include "app/clitext.h"

#include "core/analysis/memoryanalysis.h"
#include "core/analysis/snapshotcompare.h"
#include "core/util/textlayout.h"
#include "core/util/units.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <sstream>
#include <tuple>

namespace headroom::cli {

namespace {

struct Side {
    std::shared_ptr<const LoadedTrace> trace;
    size_t index = 0;
    DeviceAnalysis analysis;
};

Side loadSide(const TraceSource& source, const std::string& path, std::optional<int> device)
{
    Side s;
    s.trace = source(path);
    s.index = pickDevice(*s.trace, device, path);
    s.analysis = analyzeDevice(*s.trace, s.index);
    return s;
}

/// One named total at each peak: {"a_bytes", "b_bytes", "delta_bytes"} per name.
template <size_t N, typename NameFn>
nlohmann::json sideBySide(const std::array<int64_t, N>& a, const std::array<int64_t, N>& b, NameFn name)
{
    nlohmann::json m = nlohmann::json::object();
    for (size_t i = 0; i < N; ++i)
        m[name(i)] = {{"a_bytes", a[i]}, {"b_bytes", b[i]}, {"delta_bytes", b[i] - a[i]}};
    return m;
}

/// Every category and phase that changed, as {kind, name, delta_bytes}, largest change first;
/// `grew` picks the side.
nlohmann::json changes(const Comparison& c, bool grew)
{
    std::vector<std::tuple<int64_t, std::string, std::string>> rows;
    for (size_t i = 0; i < c.categoriesA.size(); ++i)
        rows.emplace_back(c.categoriesB[i] - c.categoriesA[i], "category", categoryKeyAt(i));
    for (size_t i = 0; i < c.phasesA.size(); ++i)
        rows.emplace_back(c.phasesB[i] - c.phasesA[i], "phase", phaseKeyAt(i));
    for (const ModuleDiff& m : c.modules)
        rows.emplace_back(m.bytesDelta(), "module", m.forward);
    for (const UserCategoryDiff& u : c.userCategories)
        rows.emplace_back(u.bytesDelta(), "your category", u.name);
    // A line's allocations change size with the sequence or the batch: net per line.
    std::map<std::string, int64_t> byLine;
    for (const SignatureDiff& d : c.differences)
        byLine[d.frame.empty() ? "(no frames)" : d.frame] += d.bytesDelta();
    for (const auto& [line, delta] : byLine)
        rows.emplace_back(delta, "stack", line);
    std::erase_if(rows, [&](const auto& r) { return grew ? std::get<0>(r) <= 0 : std::get<0>(r) >= 0; });
    std::stable_sort(rows.begin(), rows.end(),
                     [](const auto& x, const auto& y) { return std::abs(std::get<0>(x)) > std::abs(std::get<0>(y)); });
    nlohmann::json out = nlohmann::json::array();
    for (const auto& [delta, kind, name] : rows)
        out.push_back({{"kind", kind}, {"name", name}, {"delta_bytes", delta}});
    return out;
}

nlohmann::json comparisonJson(const Comparison& c, const Side& a, const Side& b)
{
    nlohmann::json iterations = nlohmann::json::array();
    for (const IterationPair& p : c.iterations)
        iterations.push_back({{"iteration", p.iteration},
                              {"a_peak_bytes", p.peakA >= 0 ? nlohmann::json(p.peakA) : nlohmann::json(nullptr)},
                              {"b_peak_bytes", p.peakB >= 0 ? nlohmann::json(p.peakB) : nlohmann::json(nullptr)}});
    nlohmann::json stacks = nlohmann::json::array();
    for (const SignatureDiff& d : c.differences)
        stacks.push_back({{"frame", d.frame},
                          {"size", d.size},
                          {"a_count", d.countA},
                          {"b_count", d.countB},
                          {"delta_bytes", d.bytesDelta()}});
    nlohmann::json modules = nlohmann::json::array();
    for (const ModuleDiff& m : c.modules)
        modules.push_back(
            {{"forward", m.forward}, {"a_bytes", m.bytesA}, {"b_bytes", m.bytesB}, {"delta_bytes", m.bytesDelta()}});
    const double growth = c.peakA > 0 ? double(c.peakB - c.peakA) / double(c.peakA) : 0.0;
    nlohmann::json out = {{"file_a", a.trace->snapshot.path},
            {"file_b", b.trace->snapshot.path},
            {"device_a", a.trace->snapshot.devices[a.index].device},
            {"device_b", b.trace->snapshot.devices[b.index].device},
            {"peak_a_bytes", c.peakA},
            {"peak_b_bytes", c.peakB},
            {"peak_delta_bytes", c.peakB - c.peakA},
            {"peak_growth", c.peakA > 0 ? nlohmann::json(growth) : nlohmann::json(nullptr)},
            {"reserved_a_bytes", c.reservedA},
            {"reserved_b_bytes", c.reservedB},
            {"ooms_a", c.oomsA},
            {"ooms_b", c.oomsB},
            {"iterations", std::move(iterations)},
            {"by_category", sideBySide(c.categoriesA, c.categoriesB, categoryKeyAt)},
            {"by_phase", sideBySide(c.phasesA, c.phasesB, phaseKeyAt)},
            {"by_module", std::move(modules)},
            {"by_stack", std::move(stacks)},
            {"grew", changes(c, true)},
            {"shrank", changes(c, false)}};
    if (!c.userCategories.empty()) {
        nlohmann::json rows = nlohmann::json::array();
        for (const UserCategoryDiff& u : c.userCategories)
            rows.push_back({{"name", u.name}, {"a_bytes", u.bytesA}, {"b_bytes", u.bytesB}, {"delta_bytes", u.bytesDelta()}});
        out["by_user_category"] = std::move(rows);
    }
    return out;
}

void printChanges(std::ostream& os, const char* title, const nlohmann::json& rows, size_t top)
{
    os << title << (rows.empty() ? " nothing\n" : "\n");
    for (size_t i = 0; i < rows.size() && i < top; ++i) {
        const std::string kind = rows[i]["kind"].get<std::string>(), name = rows[i]["name"].get<std::string>();
        // Frames are shortened; a name in parentheses ("(no frames)", "(no rule)") is not a frame.
        const bool frame = (kind == "stack" || kind == "module") && !name.starts_with("(");
        os << "  " << signedBytes(rows[i]["delta_bytes"].get<int64_t>()) << "  " << kind << " "
           << (frame ? compactFrame(name) : name) << "\n";
    }
}

std::string comparisonText(const nlohmann::json& j)
{
    std::ostringstream os;
    os << "A: " << j["file_a"].get<std::string>() << " (device " << j["device_a"].get<int>() << "), peak "
       << formatBytes(j["peak_a_bytes"].get<int64_t>()) << "\nB: " << j["file_b"].get<std::string>() << " (device "
       << j["device_b"].get<int>() << "), peak " << formatBytes(j["peak_b_bytes"].get<int64_t>()) << "\n";
    os << "peak allocated " << signedBytes(j["peak_delta_bytes"].get<int64_t>())
       << (j["peak_growth"].is_null() ? std::string() : " (" + signedPercent(j["peak_growth"].get<double>()) + ")")
       << " from A to B\n";
    printChanges(os, "grew, at the peaks:", j["grew"], 8);
    printChanges(os, "shrank, at the peaks:", j["shrank"], 8);
    os << "iterations (peak A -> B):";
    size_t shown = 0;
    for (const auto& it : j["iterations"]) {
        if (shown++ == 8) {
            os << " ...";
            break;
        }
        auto side = [](const nlohmann::json& v) {
            return v.is_null() ? std::string("-") : formatBytes(v.get<int64_t>());
        };
        os << "  " << it["iteration"].get<int>() << ": " << side(it["a_peak_bytes"]) << " -> "
           << side(it["b_peak_bytes"]);
    }
    os << "\n";
    return os.str();
}

} // namespace

CommandOutput runCompare(const CompareRequest& r, const TraceSource& source)
{
    const double maxGrowth = r.maxGrowth.empty() ? 0.0 : percentOption("--max-growth", r.maxGrowth, 1e6, "5%");
    std::optional<UserCategories> rules;
    if (!r.categories.empty()) {
        try {
            rules = UserCategories::load(r.categories);
        } catch (const UserCategoriesError& e) {
            throw CommandError(std::string("--categories: ") + e.what());
        }
    }
    const Side a = loadSide(source, r.fileA, r.device);
    const Side b = loadSide(source, r.fileB, r.device);
    const Comparison c = Comparison::compute({a.trace.get(), a.index, &a.analysis}, {b.trace.get(), b.index, &b.analysis},
                                             50, rules ? &*rules : nullptr);
    CommandOutput out;
    out.json = comparisonJson(c, a, b);
    out.text = comparisonText(out.json);
    out.json["max_growth"] = r.maxGrowth.empty() ? nlohmann::json(nullptr) : nlohmann::json(maxGrowth);
    out.json["passed"] = nullptr;
    if (!r.maxGrowth.empty()) {
        const bool ok = c.peakA > 0 ? double(c.peakB - c.peakA) <= maxGrowth * double(c.peakA) : c.peakB == 0;
        out.json["passed"] = ok;
        out.exitCode = ok ? 0 : 1;
        out.text += std::string(ok ? "PASS" : "FAIL") + " growth: limit " + signedPercent(maxGrowth) + "\n";
    }
    return out;
}

void CompareCommand::add(CLI::App& app)
{
    m_cmd = app.add_subcommand("compare", "What grew and what shrank between two runs: by category, phase, module, "
                                          "stack and iteration");
    m_cmd->add_option("A", m_req.fileA, "The run before (snapshot or trace)")->required();
    m_cmd->add_option("B", m_req.fileB, "The run after")->required();
    m_cmd->add_option("--device", m_req.device, "Device ordinal in both (default: each file's highest peak)");
    m_cmd->add_option("--max-growth", m_req.maxGrowth, "Exit 1 when B's peak grew more than this over A's, e.g. 5%");
    m_cmd->add_option("--categories", m_req.categories,
                      "Your own categories (a JSON rules file, as analyze takes): what each rule claims at each peak "
                      "(in --json: by_user_category)");
    m_cmd->add_flag("--json", m_json, "Machine-readable JSON output");
}

int CompareCommand::run()
{
    return runAndEmit([&] { return runCompare(m_req, directSource()); }, m_json);
}

} // namespace headroom::cli
