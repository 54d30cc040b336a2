// SPDX-License-Identifier: MIT
// What the newest PyTorch records, shown (issue 30), on the generated 2.10-era snapshot
// tests/data/modern/pt210_all_keys.pickle (tools/gen_modern_snapshot.py): an allocation's
// details give its user_metadata, its pool and, under the backward's stack, the forward's
// ("allocated for the backward of:"); an FX frame reads as the model's line with the kernel
// beside it; the allocator view and the timeline show each private pool apart.
#include "analysedwindow.h"

#include "core/model/recordedtensors.h"
#include "ui/timeline/poolcurveitems.h"
#include "ui/timeline/timelineview.h"
#include "ui/views/allocationsmodel.h"
#include "ui/views/allocationsview.h"
#include "ui/views/allocatorview.h"

#include <qcustomplot.h>

using namespace headroom;

namespace {

/// The allocation born at the first alloc entry that `pred` accepts.
int64_t allocationWhere(const ExplorerData& data, const std::function<bool(size_t)>& pred)
{
    const auto& allocs = data.timeline().allocations;
    for (size_t i = 0; i < allocs.size(); ++i)
        if (allocs[i].start >= 0 && pred(size_t(allocs[i].start)))
            return int64_t(i);
    return -1;
}

} // namespace

TEST_CASE("The newest keys are shown: metadata, forward frames, FX frames and private pools", "[modern]")
{
    Analysed a(QStringLiteral(HEADROOM_SOURCE_DIR "/tests/data/modern/pt210_all_keys.pickle"));
    const ExplorerData& data = a.data();
    const TraceEvents& ev = data.device().trace;
    const AllocationsModel* model = a.explorer().allocations()->model();

    // A compiled forward allocation: the model's line, the kernel and the node; its metadata.
    const int64_t compiled = allocationWhere(data, [&](size_t e) {
        return !data.frames().stack(ev.stack[e]).empty() && data.frames().fx(data.frames().stack(ev.stack[e]).front());
    });
    REQUIRE(compiled >= 0);
    const QString stack = model->stackText(compiled);
    INFO(stack.toStdString());
    CHECK(stack.startsWith(QStringLiteral(
        "/home/user/project/model.py:21:forward [compiled: addmm at /tmp/torchinductor_user/k7/ck7abc.py:45:call]")));
    CHECK(stack.contains(QStringLiteral("FX node addmm: call_function aten.addmm.default")));
    const QString record = model->recordText(compiled);
    CHECK(record.contains(QStringLiteral("user_metadata: layers.0")));
    CHECK(record.contains(QStringLiteral("compile context: Torch-Compiled Region: 0/0")));

    // A gradient the backward made: the forward's stack under the backward's.
    const int64_t backward = allocationWhere(data, [&](size_t e) {
        return !entryStringAt(ev.forwardFrames, data.frames().strings(), int64_t(e)).empty();
    });
    REQUIRE(backward >= 0);
    const QString backwardStack = model->stackText(backward);
    CHECK(backwardStack.contains(QStringLiteral("allocated for the backward of:\n  File \"/home/user/project/train.py\"")));
    CHECK(backwardStack.contains(QStringLiteral("b = self.relu(a)")));

    // A graph's buffer: its private pool.
    const int64_t pooled = allocationWhere(data, [&](size_t e) { return entryPoolAt(ev.poolIds, int64_t(e)).has_value(); });
    REQUIRE(pooled >= 0);
    CHECK(model->recordText(pooled).contains(QStringLiteral("private pool (1, 0)")));
    a.explorer().selection()->setAllocation(pooled);
    QApplication::processEvents();
    CHECK(a.explorer().allocations()->stackShown().contains(QStringLiteral("private pool (1, 0)")));

    // The allocator view at the end: each pool's reservation apart from the default pool.
    a.explorer().showView(QStringLiteral("allocator"));
    a.explorer().selection()->setEvent(data.eventCount() - 1);
    QApplication::processEvents();
    const QString summary = a.explorer().allocator()->summaryText();
    INFO(summary.toStdString());
    CHECK(summary.contains(QStringLiteral("Private pools")));
    CHECK(summary.contains(QStringLiteral("(1, 0): 20.00 MiB reserved in 1 segment, 5.00 MiB allocated")));
    CHECK(summary.contains(QStringLiteral("(2, 0): 20.00 MiB reserved")));

    // The timeline: a line per pool, named in the legend, at its live bytes.
    const PoolCurveItems& pools = a.explorer().timeline()->poolItems();
    REQUIRE(pools.count() == 2);
    CHECK(pools.graph(0)->name() == QStringLiteral("private pool (1, 0)"));
    CHECK(pools.graph(1)->name() == QStringLiteral("private pool (2, 0)"));
    REQUIRE_FALSE(pools.graph(0)->data()->isEmpty());
    CHECK((pools.graph(0)->data()->end() - 1)->value == 5.0 * (1 << 20));
    if (qEnvironmentVariableIsSet("HEADROOM_SHOT_DIR"))
        a.window.grab().save(qEnvironmentVariable("HEADROOM_SHOT_DIR") + QStringLiteral("/modern-keys.png"));
}
