// SPDX-License-Identifier: MIT
#include "ui/shell/postmortem.h"

#include "ui/views/diagnosisview.h"

#include "core/report/postmortemmarkdown.h"
#include "ui/explorer/explorerview.h"
#include "ui/explorer/viewexport.h"
#include "ui/shell/explorer.h"
#include "ui/views/bookmarksview.h"
#include "ui/views/diagnosisview.h"
#include "ui/whatif/whatifpanel.h"
#include "ui/whatif/whatifview.h"

#include <QApplication>
#include <QDateTime>
#include <QDir>
#include <QFile>
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
    selection->setModuleFilter({}, {});
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
    selection->setModuleFilter(saved.moduleFilter, saved.moduleLabel);
    if (saved.hasEvent())
        selection->setEvent(saved.event);
    if (saved.hasRange())
        selection->setRange(saved.rangeFirst, saved.rangeLast);
    selection->setAllocation(saved.allocation);
    if (!imageError.isEmpty())
        return fail(imageError);

    // The text is core's (the same as `headroom-cli analyze --markdown`); the GUI adds the
    // images, the notes and the what-if panel.
    PostmortemOptions options;
    options.images = true;
    options.writtenBy = QObject::tr("Written by Headroom %1 on %2 from `%3`.")
                            .arg(QStringLiteral(HEADROOM_VERSION), QDateTime::currentDateTime().toString(Qt::ISODate),
                                 sourcePath)
                            .toStdString();
    // The capacity finding's first move as the diagnosis shows it (the what-if's ladder).
    std::vector<Finding> findings = data->findings;
    if (const QString move = explorer.diagnosis()->capacityFirstMove(); !move.isEmpty())
        for (Finding& f : findings)
            if (f.kind == "capacity")
                f.firstMove = move.toStdString();
    QString md = QString::fromStdString(postmortemMarkdown(
        {*data->trace, data->deviceIndex, data->analysis, data->capacity, findings}, options));
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
