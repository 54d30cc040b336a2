// SPDX-License-Identifier: MIT
#include "ui/shell/postmortem.h"

#include "core/util/units.h"
#include "ui/explorer/explorerview.h"
#include "ui/explorer/viewexport.h"
#include "ui/plot/categorystyle.h"
#include "ui/shell/explorer.h"
#include "ui/views/bookmarksview.h"
#include "ui/views/diagnosisview.h"
#include "ui/whatif/whatifpanel.h"
#include "ui/whatif/whatifview.h"

#include <QApplication>
#include <QDateTime>
#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QFuture>
#include <QObject>
#include <QtConcurrent/QtConcurrentRun>

namespace headroom {

bool writePostmortem(Explorer& explorer, const QString& directory, QString* error)
{
    auto fail = [&](const QString& why) {
        if (error)
            *error = why;
        return false;
    };
    const ExplorerDataPtr data = explorer.data();
    if (!data)
        return fail(QObject::tr("The analysis is not ready yet."));
    const QString sourcePath = QString::fromStdString(data->trace->snapshot.path);
    QDir dir(directory);
    if (!dir.exists() && !QDir().mkpath(directory))
        return fail(QObject::tr("Cannot create %1").arg(directory));

    struct Image {
        const char* view;
        const char* file;
        QSize size;
    };
    const Image images[] = {{"timeline", "timeline.png", {1600, 700}},
                            {"breakdown", "breakdown_at_peak.png", {1200, 500}},
                            {"stacks", "stacks_at_peak.png", {1600, 600}},
                            {"diagnosis", "diagnosis.png", {1000, 800}},
                            {"whatif", "whatif.png", {1400, 800}}};
    // What the last views need (the what-if panel's allocator replay) runs while the first
    // are drawn.
    for (const Image& img : images)
        if (ExplorerView* v = explorer.view(QString::fromLatin1(img.view)))
            v->prepareExport();

    // The images show the peak; the user's selection comes back afterwards.
    Selection* selection = explorer.selection();
    const SelectionState saved = selection->state();
    const MemoryTimeline& tl = data->timeline();
    selection->clearRange();
    selection->setStackFilter({});
    selection->setAllocation(-1);
    selection->setEvent(tl.peakEventIndex);
    QApplication::processEvents();

    // Drawn here, encoded on the pool: the PNG encoder took a third of the export's time on
    // the GUI thread, and it overlaps the next view's drawing.
    std::vector<QFuture<QString>> writes; // each: why it failed, or empty
    for (const Image& img : images) {
        ExplorerView* v = explorer.view(QString::fromLatin1(img.view));
        if (!v)
            continue;
        writes.push_back(QtConcurrent::run([image = ViewExport::image(v, img.size),
                                            path = dir.filePath(QString::fromLatin1(img.file))] {
            QString why;
            ViewExport::writeImage(image, path, &why);
            return why;
        }));
    }
    QString imageError;
    for (QFuture<QString>& written : writes)
        if (imageError.isEmpty())
            imageError = written.result();
        else
            written.waitForFinished();
    // Put the selection back (each setter is a no-op when nothing changes).
    selection->setStackFilter(saved.stackFilter);
    if (saved.hasEvent())
        selection->setEvent(saved.event);
    if (saved.hasRange())
        selection->setRange(saved.rangeFirst, saved.rangeLast);
    selection->setAllocation(saved.allocation);
    if (!imageError.isEmpty())
        return fail(imageError);

    const Breakdown& peak = data->analysis.atPeak;
    QString md;
    md += QObject::tr("# Memory postmortem: %1\n\n").arg(QFileInfo(sourcePath).fileName());
    md += QObject::tr("Written by Headroom %1 on %2 from `%3`.\n\n")
              .arg(QStringLiteral(HEADROOM_VERSION), QDateTime::currentDateTime().toString(Qt::ISODate), sourcePath);
    md += QObject::tr("## Summary\n\n");
    md += QObject::tr("| | |\n|---|---|\n");
    md += QObject::tr("| Device | %1 (%2) |\n").arg(data->device().device).arg(QString::fromStdString(data->device().deviceType));
    md += QObject::tr("| Trace entries | %1 |\n").arg(data->eventCount());
    md += QObject::tr("| Allocations | %1 |\n").arg(qulonglong(tl.allocations.size()));
    md += QObject::tr("| Peak allocated | %1 at event %2 |\n").arg(formatBytesQ(tl.peakAllocated)).arg(tl.peakEventIndex);
    md += QObject::tr("| Peak reserved | %1 |\n").arg(formatBytesQ(tl.peakReserved));
    md += QObject::tr("| Device capacity | %1 |\n")
              .arg(data->capacity.bytes > 0 ? formatBytesQ(data->capacity.bytes) : QObject::tr("unknown"));
    md += QObject::tr("| OOMs | %1 |\n").arg(qulonglong(data->device().ooms.size()));
    md += QObject::tr("| Iterations | %1 (%2) |\n\n")
              .arg(qulonglong(data->analysis.phases.iterations.size()))
              .arg(QString::fromStdString(data->analysis.phases.iterationSource));
    md += QObject::tr("## Timeline\n\n![Timeline](timeline.png)\n\n");
    md += QObject::tr("## At the peak\n\n![Breakdown at the peak](breakdown_at_peak.png)\n\n");
    md += QObject::tr("| Category | Bytes | Share |\n|---|---:|---:|\n");
    for (TensorCategory c : categoryStackOrder()) {
        const int64_t b = peak.byCategory[size_t(c)];
        if (b > 0)
            md += QStringLiteral("| %1 | %2 | %3% |\n")
                      .arg(categoryDisplayName(c), formatBytesQ(b))
                      .arg(peak.total > 0 ? 100.0 * double(b) / double(peak.total) : 0.0, 0, 'f', 1);
    }
    md += QObject::tr("| **total** | **%1** | |\n\n").arg(formatBytesQ(peak.total));
    md += QObject::tr("Largest allocations live at the peak:\n\n| Size | Category | Top frame |\n|---:|---|---|\n");
    for (size_t i : data->analysis.topAtPeak) {
        const auto top = data->frames().topFrames(tl.allocations[i].stack, 1);
        md += QStringLiteral("| %1 | %2 | `%3` |\n")
                  .arg(formatBytesQ(tl.allocations[i].size), categoryDisplayName(data->analysis.classes[i].category),
                       top.empty() ? QObject::tr("(no frames)") : QString::fromStdString(data->frames().formatFrame(top[0])));
    }
    md += QObject::tr("\n![Stacks at the peak](stacks_at_peak.png)\n\n");
    md += QObject::tr("## Diagnosis\n\n") + DiagnosisView::markdown(*data) + QStringLiteral("\n![Diagnosis](diagnosis.png)\n\n");
    if (const QString notes = explorer.bookmarks()->markdown(); !notes.isEmpty())
        md += QObject::tr("## Notes and bookmarks\n\n") + notes + QStringLiteral("\n");
    md += QObject::tr("## What-if\n\n") + explorer.whatIf()->panel()->markdown() +
          QStringLiteral("\n![What-if](whatif.png)\n");

    QFile out(dir.filePath(QStringLiteral("report.md")));
    if (!out.open(QIODevice::WriteOnly | QIODevice::Truncate))
        return fail(QObject::tr("Cannot write %1").arg(out.fileName()));
    out.write(md.toUtf8());
    return true;
}

} // namespace headroom
