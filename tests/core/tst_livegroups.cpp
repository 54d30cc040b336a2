// SPDX-License-Identifier: MIT
// What is alive at the peak, grouped by the code that allocated it; the postmortem text
// and the 100-column layout of headroom-cli's text.
#include "core/analysis/livegroups.h"
#include "core/analysis/memoryanalysis.h"
#include "core/analysis/usercode.h"
#include "core/io/loader.h"
#include "core/report/analysisreport.h"
#include "core/report/postmortemmarkdown.h"
#include "core/util/textlayout.h"
#include "core/util/units.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <sstream>

constexpr int64_t kMiB = int64_t(1) << 20;

using namespace headroom;

namespace {

std::shared_ptr<const LoadedTrace> bundledSample()
{
    return Loader::load(std::string(HEADROOM_SOURCE_DIR) + "/sample_traces/pt27_kk_memory_ctx128_fullstep.pickle.gz");
}

std::string joinLines(const std::vector<std::string>& lines)
{
    std::string out;
    for (const std::string& l : lines)
        out += l + "\n";
    return out;
}

size_t widestLine(const std::string& text)
{
    std::istringstream in(text);
    size_t widest = 0;
    for (std::string line; std::getline(in, line);)
        widest = std::max(widest, line.size());
    return widest;
}

} // namespace

TEST_CASE("live groups: the bundled sample's gradients are 96 x 100 MiB from one line", "[livegroups]")
{
    const auto trace = bundledSample();
    const DeviceAnalysis a = analyzeDevice(*trace, 0);
    const MemoryTimeline& tl = trace->timelines[0];
    const LiveGroups g = LiveGroups::at(*trace, 0, a, tl.peakEventIndex, 10);
    CHECK(g.bytes == tl.peakAllocated);
    CHECK(g.stackGroups == 25);
    REQUIRE(g.byStack.size() == 10);
    int64_t previous = INT64_MAX;
    for (const LiveGroup& row : g.byStack) {
        CHECK(row.bytes <= previous); // largest first
        CHECK(row.bytes == row.count * row.size);
        previous = row.bytes;
    }
    const auto grads = std::find_if(g.byStack.begin(), g.byStack.end(), [](const LiveGroup& r) {
        return r.category == TensorCategory::Gradient && r.size == 100 * kMiB;
    });
    REQUIRE(grads != g.byStack.end());
    CHECK(grads->count == 96);
    CHECK(grads->phase == Phase::Backward);
    CHECK(grads->site().find("BmmBackward0::apply") != std::string::npos);
    // The optimizer's two state tensors per weight come from two lines of its step.
    size_t optimizerLines = 0;
    for (const LiveGroup& row : g.byStack)
        optimizerLines += row.category == TensorCategory::OptimizerState && row.size == 100 * kMiB &&
                          row.site().find("optimizers.py:8") != std::string::npos;
    CHECK(optimizerLines == 2);
    // At the peak (the optimizer step) only the forward's kept activations were made under
    // a module's forward.
    CHECK(g.moduleBytes > 0);
    CHECK(g.moduleBytes <= g.breakdown.byCategory[size_t(TensorCategory::Activation)]);
}

TEST_CASE("live groups: allocations under a module's forward are grouped by that forward", "[livegroups]")
{
    const auto trace = Loader::load(std::string(HEADROOM_SOURCE_DIR) + "/tests/data/real/gpu_series/niu_fwd_ctx100.pickle.gz");
    const DeviceAnalysis a = analyzeDevice(*trace, 0);
    const LiveGroups g = LiveGroups::at(*trace, 0, a, trace->timelines[0].peakEventIndex, 5);
    REQUIRE_FALSE(g.byModule.empty());
    CHECK(g.byModule.size() <= 5);
    for (const ModuleGroup& m : g.byModule)
        CHECK(m.bytes > 0);
    CHECK(g.moduleBytes <= g.bytes);
}

TEST_CASE("analyze text: grouped, and no line wider than 100 columns", "[livegroups]")
{
    const auto trace = bundledSample();
    const std::string text = wrapLines(analysisText(*trace, std::nullopt, 10));
    CHECK(text.find("96 x 100.00 MiB = 9.38 GiB  gradients, born in backward") != std::string::npos);
    CHECK(text.find("(10 of 25 sites)") != std::string::npos);
    CHECK(widestLine(text) <= kTerminalColumns);
    const nlohmann::json j = analysisJson(*trace, std::nullopt, 3);
    CHECK(j["devices"][0]["groups_at_peak"]["by_stack"].size() == 3);
}

TEST_CASE("analyze --markdown: the postmortem's text from core", "[livegroups]")
{
    const auto trace = bundledSample();
    const std::string md = analysisMarkdown(*trace, std::nullopt, 5);
    CHECK(md.find("# Memory postmortem: pt27_kk_memory_ctx128_fullstep.pickle.gz") == 0);
    CHECK(md.find("| Peak allocated | 51.04 GiB at event 19335 |") != std::string::npos);
    CHECK(md.find("| 96 x 100.00 MiB | 9.38 GiB | gradients | backward | "
                  "`torch::autograd::generated::BmmBackward0::apply(...)` |") != std::string::npos);
    CHECK(md.find("## Diagnosis") != std::string::npos);
    CHECK(md.find("![") == std::string::npos); // the images are the GUI's
}

TEST_CASE("analyze --markdown on a multi-device OOM: one postmortem, the OOM device first", "[livegroups]")
{
    // Three CPU recordings as devices 0, 1 and 2, device 1 cut by an OOM (tests/data/cpu/record_imbalanced_oom.py).
    const auto trace = Loader::load(std::string(HEADROOM_SOURCE_DIR) + "/tests/data/cpu/imbalanced_oom.pickle");
    const std::string md = analysisMarkdown(*trace, std::nullopt, 3);
    CHECK(md.find("# Memory postmortem: imbalanced_oom.pickle\n") == 0);
    size_t titles = 0;
    for (size_t at = md.find("Memory postmortem"); at != std::string::npos; at = md.find("Memory postmortem", at + 1))
        ++titles;
    CHECK(titles == 1);
    const size_t d1 = md.find("## Device 1 (out of memory)"), d0 = md.find("## Device 0\n"), d2 = md.find("## Device 2\n");
    REQUIRE(d1 != std::string::npos);
    REQUIRE(d0 != std::string::npos);
    REQUIRE(d2 != std::string::npos);
    CHECK(d1 < d0);
    CHECK(d0 < d2);
    CHECK(md.find("\n### Diagnosis") != std::string::npos); // each device's sections one level down
    CHECK(md.find("\n#### Capacity") != std::string::npos);
}

TEST_CASE("wrapLines: words, indentation, sizes with their units, paths at slashes", "[livegroups]")
{
    CHECK(wrapLines("short\n") == "short\n");
    CHECK(wrapLines("  aaa bbb ccc", 9) == "  aaa bbb\n    ccc"); // the hanging indent is at most half the width
    // A size never breaks from its unit.
    CHECK(wrapLines("xxxxxx 12.69 GiB", 14) == "xxxxxx\n    12.69 GiB");
    // A word wider than the room is cut, after a slash where one is near.
    CHECK(wrapLines("/aaaa/bbbb/cccc", 12) == "/aaaa/bbbb/\n    cccc");
    const std::string wide(250, 'x');
    CHECK(widestLine(wrapLines(wide)) <= kTerminalColumns);
}

TEST_CASE("compactFrame: C++ argument lists and site-packages paths go", "[livegroups]")
{
    CHECK(compactFrame("??:0:torch::autograd::generated::BmmBackward0::apply(std::vector<at::Tensor>&&)") ==
          "torch::autograd::generated::BmmBackward0::apply(...)");
    CHECK(compactFrame(":0:torch::autograd::Node::operator()(std::vector<at::Tensor>&&)") ==
          "torch::autograd::Node::operator()(...)");
    CHECK(compactFrame("/venv/lib/python3.11/site-packages/torch/optim/optimizer.py:493:wrapper") ==
          "torch/optim/optimizer.py:493:wrapper");
    CHECK(compactFrame("/home/me/model.py:12:forward") == "/home/me/model.py:12:forward");
}

TEST_CASE("allocated by: the user's own code, not the library line under it", "[livegroups]")
{
    CHECK(isLibraryFile("/venv/lib/python3.12/site-packages/torch/nn/functional.py"));
    CHECK(isLibraryFile("/usr/lib/python3/dist-packages/torch/nn/modules/module.py"));
    CHECK(isLibraryFile("/usr/lib/python3.11/threading.py"));
    CHECK(isLibraryFile("/opt/conda/lib/python3.10/concurrent/futures/thread.py"));
    CHECK_FALSE(isLibraryFile("/home/me/project/lib/python_utils/train.py"));
    CHECK_FALSE(isLibraryFile("/home/me/model.py"));

    // The bundled sample's forward activations alive at the peak come from torch's einsum under
    // einops; the user's line is the model's.
    const auto trace = bundledSample();
    const DeviceAnalysis a = analyzeDevice(*trace, 0);
    const LiveGroups g = LiveGroups::at(*trace, 0, a, trace->timelines[0].peakEventIndex, 50);
    size_t activations = 0;
    for (const LiveGroup& row : g.byStack) {
        if (row.category != TensorCategory::Activation || row.size < (1 << 20))
            continue;
        ++activations;
        INFO(row.userCode);
        CHECK(row.site().find("site-packages") != std::string::npos); // the innermost Python frame
        CHECK(row.userCode.find("site-packages") == std::string::npos);
        CHECK(row.userCode.find(".py:") != std::string::npos);
    }
    CHECK(activations > 0);
}

TEST_CASE("the stack tree starts at the user's code, not the interpreter's start", "[livegroups]")
{
    const auto trace = bundledSample();
    const DeviceAnalysis a = analyzeDevice(*trace, 0);
    const FrameTable& ft = trace->snapshot.frames;
    const auto nodes = a.stackTreeAt(trace->timelines[0], ft, trace->timelines[0].peakEventIndex);
    std::vector<std::string> roots;
    for (const StackNode& n : nodes)
        if (n.parent == 0)
            roots.push_back(ft.formatFrame(n.frame));
    INFO(joinLines(roots));
    // The main thread's <module> line and the autograd thread's engine; before, the first rows
    // were __libc_init_first, Py_BytesMain, pymain_main ... and clone, pthread.
    REQUIRE(roots.size() == 2);
    CHECK(std::count_if(roots.begin(), roots.end(),
                        [](const std::string& r) { return r.find("benchmark.py:441:<module>") != std::string::npos; }) == 1);
    CHECK(std::count_if(roots.begin(), roots.end(), [](const std::string& r) {
              return r.find("torch::autograd::python::PythonEngine::thread_init") != std::string::npos;
          }) == 1);
    // One Python path is whole: under <module>, the next rows are the user's functions, with
    // no CPython call machinery (slot_tp_call, method_vectorcall) between them.
    for (const StackNode& n : nodes) {
        const std::string name(ft.strings().get(ft.frame(n.frame).name));
        CHECK(name.rfind("slot_tp_", 0) != 0);
        CHECK(name.rfind("method_vectorcall", 0) != 0);
        CHECK(name != "Py_RunMain");
    }
}
