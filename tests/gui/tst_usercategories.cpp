// SPDX-License-Identifier: MIT
// Settings ▸ Your Categories (issue 30): the rules dialog tests the rules on the open file and
// refuses a bad one, naming the rule; accepted, the Breakdown's third column shows what each
// rule claims at the selected event, adding up to what is alive.
#include "analysedwindow.h"

#include <catch2/catch.hpp>

#include "core/io/loader.h"
#include "ui/explorer/explorerdata.h"
#include "ui/shell/usercategoriesdialog.h"
#include "ui/shell/usercategorystore.h"
#include "ui/views/allocationsmodel.h"
#include "ui/views/breakdownview.h"

#include <qcustomplot.h>

#include <QLabel>
#include <QPlainTextEdit>
#include <QTableWidget>
#include <QTemporaryDir>

using namespace headroom;

namespace {

ExplorerDataPtr sample()
{
    static ExplorerDataPtr data = ExplorerData::compute(
        Loader::load(std::string(HEADROOM_REAL_TRACES_DIR) + "/pt27_kk_memory_ctx128_fullstep.pickle"), 0);
    return data;
}

const char* const kRules = R"({"categories": [
  {"name": "optimizer step", "function": "^(step|_multi_tensor_adamw|_fused_adamw)$", "color": "#8e44ad"},
  {"name": "autograd backward", "function": "Backward"}
]})";

} // namespace

TEST_CASE("Your Categories: tested on the open file, a bad rule refused by name", "[categories]")
{
    UserCategoriesDialog dialog(QString::fromUtf8(kRules), sample());
    auto* status = dialog.findChild<QLabel*>(QStringLiteral("categoriesStatus"));
    auto* table = dialog.findChild<QTableWidget*>(QStringLiteral("categoriesTest"));
    REQUIRE(status);
    REQUIRE(table);
    // Opened on a file, it has tested the rules already: two rules and the unclaimed rest.
    REQUIRE(dialog.rules());
    CHECK(table->rowCount() == 3);
    CHECK(table->item(0, 0)->text() == QStringLiteral("optimizer step"));
    CHECK(table->item(0, 1)->text().contains(QStringLiteral("GiB")));
    CHECK(table->item(2, 0)->text() == QStringLiteral("(no rule)"));
    CHECK(status->text().contains(QStringLiteral("2 rule(s), valid")));

    // Saved and read back, the same rules.
    QTemporaryDir dir;
    const QString path = dir.filePath(QStringLiteral("rules.json"));
    REQUIRE(dialog.saveFile(path));

    // A bad expression: no rules, the error names the rule; OK does not close on it.
    auto* text = dialog.findChild<QPlainTextEdit*>(QStringLiteral("categoriesText"));
    REQUIRE(text);
    text->setPlainText(QStringLiteral(R"([{"name": "broken", "function": "(x"}])"));
    CHECK_FALSE(dialog.test());
    CHECK_FALSE(dialog.rules());
    CHECK(status->text().contains(QStringLiteral("rule 1 (&quot;broken&quot;)")));
    dialog.open();
    dialog.accept();
    CHECK(dialog.isVisible());
    CHECK(dialog.result() != QDialog::Accepted);

    REQUIRE(dialog.openFile(path));
    CHECK(dialog.rules()->rules().size() == 2);
    dialog.accept();
    CHECK(dialog.result() == QDialog::Accepted);
}

TEST_CASE("The Breakdown's third column: what each of the user's rules claims, following the event",
          "[categories]")
{
    const ExplorerDataPtr data = sample();
    BreakdownView view(nullptr);
    view.resize(900, 400);
    view.setData(data);
    CHECK(view.userCategories().empty());
    CHECK(view.plot()->axisRects().size() == 2);

    auto rules = std::make_shared<UserCategories>(UserCategories::parse(kRules, "rules"));
    view.setUserCategories(rules);
    CHECK(view.plot()->axisRects().size() == 3);
    REQUIRE(view.userCategories().size() == 2);
    const int64_t atPeak = view.userCategories()[0].bytes;
    CHECK(atPeak > 0); // the optimizer's state is alive at the peak
    // Bars: the rules and "(no rule)" add up to the live total.
    double sum = 0;
    for (int i = 0; i < view.plot()->plottableCount(); ++i)
        if (auto* bars = qobject_cast<QCPBars*>(view.plot()->plottable(i)))
            if (bars->keyAxis()->axisRect() == view.plot()->axisRects().at(2))
                sum += bars->data()->constBegin()->value;
    CHECK(sum == double(view.breakdown().total));

    // Another event: before the optimizer step, the rule claims nothing.
    SelectionState s;
    s.event = data->timeline().peakEventIndex / 2;
    view.selectionChanged(s, Selection::Event);
    CHECK(view.shownEvent() == s.event);
    CHECK(view.userCategories()[0].bytes < atPeak);

    // None again: back to two columns.
    view.setUserCategories(nullptr);
    CHECK(view.plot()->axisRects().size() == 2);
    CHECK(view.userCategories().empty());
}

TEST_CASE("An allocation's details show its user_metadata and the recorder's record", "[categories]")
{
    // user_metadata: a 2.8-era entry written by PyTorch's memory-metadata API.
    const std::string doc = R"({"segments": [{"device": 0, "address": 4096, "total_size": 8192, "stream": 0,
        "blocks": [{"size": 8192, "state": "inactive"}]}],
        "device_traces": [[{"action": "alloc", "addr": 4096, "size": 4096, "stream": 0, "time_us": 1,
            "frames": [{"filename": "train.py", "line": 3, "name": "main"}], "user_metadata": "kv_cache.layer3",
            "compile_context": "torch/_dynamo: graph 0"}]]})";
    const ExplorerDataPtr tagged =
        ExplorerData::compute(Loader::loadBytes("tagged.json", std::vector<uint8_t>(doc.begin(), doc.end())), 0);
    AllocationsModel model;
    model.resetData(tagged, {0});
    CHECK(model.recordText(0).contains(QStringLiteral("user_metadata: kv_cache.layer3")));
    CHECK(model.recordText(0).contains(QStringLiteral("compile context: torch/_dynamo: graph 0")));

    // A CPU recording with the recorder's headroom_tensor: shape, kind and module.
    const ExplorerDataPtr shaped =
        ExplorerData::compute(Loader::load(std::string(HEADROOM_SOURCE_DIR) + "/tests/data/cpu/llama_base_shapes.pickle"), 0);
    std::vector<size_t> all(shaped->timeline().allocations.size());
    for (size_t i = 0; i < all.size(); ++i)
        all[i] = i;
    model.resetData(shaped, all);
    int recorded = 0, withModule = 0;
    for (size_t i = 0; i < all.size(); ++i) {
        const QString t = model.recordText(int64_t(i));
        recorded += t.contains(QStringLiteral("recorded: "));
        withModule += t.contains(QStringLiteral("blocks."));
    }
    CHECK(recorded > 0);
    CHECK(withModule > 0);
    // With the op graph (docs/formats.md: op, inputs, saves) the record names the ATen op.
    const ExplorerDataPtr graph =
        ExplorerData::compute(Loader::load(std::string(HEADROOM_SOURCE_DIR) + "/tests/data/cpu/decoder_infer_graph.pickle"), 0);
    std::vector<size_t> rows(graph->timeline().allocations.size());
    for (size_t i = 0; i < rows.size(); ++i)
        rows[i] = i;
    model.resetData(graph, rows);
    int byAddmm = 0;
    for (size_t i = 0; i < rows.size(); ++i)
        byAddmm += model.recordText(int64_t(i)).contains(QStringLiteral("\nmade by aten::addmm"));
    CHECK(byAddmm > 0);
    // The plain sample has none of it.
    AllocationsModel plain;
    plain.resetData(sample(), {0});
    CHECK(plain.recordText(0).isEmpty());
}

TEST_CASE("Your Categories are remembered for one file or as the default", "[categories]")
{
    const QString a = QStringLiteral(HEADROOM_REAL_TRACES_DIR "/pt27_kk_memory_ctx128_fullstep.pickle");
    const QString b = QStringLiteral(HEADROOM_SOURCE_DIR "/tests/data/cpu/llama_base_shapes.pickle");
    UserCategoryStore::save(a, QString(), false); // no default, and a forgets its own
    UserCategoryStore::save(a, QString::fromUtf8(kRules), true);
    CHECK(UserCategoryStore::hasFileRules(a));
    CHECK_FALSE(UserCategoryStore::hasFileRules(b));
    CHECK(UserCategoryStore::rulesFor(a) == QString::fromUtf8(kRules));
    CHECK(UserCategoryStore::rulesFor(b).isEmpty());

    // The window applies a file's own rules when that file opens, and the default for another.
    Analysed window(a);
    const UserCategories* rules = window.explorer().breakdown()->userCategoryRules();
    REQUIRE(rules);
    CHECK(rules->rules().front().name == "optimizer step");
    {
        QSignalSpy analysed(window.window.explorer(), &Explorer::dataAvailable);
        window.window.openFile(b);
        REQUIRE(analysed.wait(kTimeoutMs));
    }
    CHECK_FALSE(window.explorer().breakdown()->userCategoryRules());

    // The dialog starts with the box ticked for a file with its own rules.
    UserCategoriesDialog own(UserCategoryStore::rulesFor(a), sample(), nullptr, UserCategoryStore::hasFileRules(a));
    CHECK(own.forThisFileOnly());
    UserCategoriesDialog noFile(QString(), nullptr, nullptr, true);
    CHECK_FALSE(noFile.forThisFileOnly()); // nothing open: the rules can only be the default

    // Saved as the default: the file's own are forgotten, every file gets them.
    UserCategoryStore::save(a, QString::fromUtf8(kRules), false);
    CHECK_FALSE(UserCategoryStore::hasFileRules(a));
    CHECK(UserCategoryStore::rulesFor(b) == QString::fromUtf8(kRules));
    UserCategoryStore::save(a, QString(), false);
}
