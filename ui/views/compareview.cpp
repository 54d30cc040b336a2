// SPDX-License-Identifier: MIT
#include "ui/views/compareview.h"

#include "core/io/loader.h"
#include "core/util/loaderror.h"
#include "core/util/minmaxpyramid.h"
#include "ui/explorer/backgroundjob.h"
#include "ui/explorer/deferredrebuild.h"
#include "ui/plot/byteaxisticker.h"
#include "ui/plot/categorystyle.h"

#include <qcustomplot.h>

#include <QFileDialog>
#include <QFileInfo>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QLocale>
#include <QPushButton>
#include <QSplitter>
#include <QTableWidget>
#include <QVBoxLayout>

namespace headroom {

namespace {

QString signedBytes(int64_t d)
{
    return (d > 0 ? QStringLiteral("+") : QString()) + formatBytesQ(d);
}

QString percent(int64_t a, int64_t b)
{
    if (a == 0)
        return b == 0 ? QString() : QStringLiteral("new");
    return QStringLiteral("%1%2%").arg(b >= a ? QStringLiteral("+") : QString()).arg(100.0 * double(b - a) / double(a), 0, 'f', 1);
}

QTableWidgetItem* cell(const QString& text, bool right = false)
{
    auto* item = new QTableWidgetItem(text);
    item->setFlags(item->flags() & ~Qt::ItemIsEditable);
    if (right)
        item->setTextAlignment(Qt::AlignRight | Qt::AlignVCenter);
    return item;
}

} // namespace

CompareView::CompareView(Selection*, QWidget* parent)
    : QWidget(parent)
    , m_pick(new QPushButton(tr("Compare with\u2026"), this))
    , m_status(new QLabel(this))
    , m_plot(new QCustomPlot(this))
    , m_summary(new QTableWidget(0, 4, this))
    , m_differences(new QTableWidget(0, 5, this))
    , m_job(new BackgroundJob(this))
{
    m_pick->setToolTip(tr("Open another snapshot (the same run before and after a fix, another rank, "
                          "another micro-batch) and compare it with this one"));
    m_status->setWordWrap(true);
    m_status->setTextFormat(Qt::RichText);
    connect(m_pick, &QPushButton::clicked, this, [this] {
        const QString path = QFileDialog::getOpenFileName(this, tr("Compare with"), QString(),
                                                          tr("Traces (*.pickle *.pkl *.gz *.json *.hrt *.html);;All files (*)"));
        if (!path.isEmpty())
            compareWith(path);
    });

    m_plot->setMinimumHeight(160);
    m_plot->yAxis->setTicker(QSharedPointer<QCPAxisTicker>(new ByteAxisTicker));
    m_plot->xAxis->setLabel(tr("progress through each trace (% of its events)"));
    m_plot->legend->setVisible(true);
    m_plot->axisRect()->insetLayout()->setInsetAlignment(0, Qt::AlignTop | Qt::AlignLeft);
    for (QCPAxis* axis : {m_plot->xAxis, m_plot->yAxis})
        axis->grid()->setPen(QPen(QColor(0, 0, 0, 28), 0));

    m_summary->setHorizontalHeaderLabels({tr("At the peak"), tr("This file"), tr("Other file"), tr("Difference")});
    m_summary->verticalHeader()->hide();
    m_summary->horizontalHeader()->setStretchLastSection(true);
    m_differences->setHorizontalHeaderLabels(
        {tr("Size"), tr("Here"), tr("There"), tr("Bytes (there \u2212 here)"), tr("Allocated at")});
    m_differences->verticalHeader()->hide();
    m_differences->horizontalHeader()->setStretchLastSection(true);
    m_differences->setSortingEnabled(false);
    m_differences->setWordWrap(false);
    m_differences->setTextElideMode(Qt::ElideLeft); // the end of a frame (file:line) says most
    m_differences->setToolTip(tr("Allocations live at one peak and not at the other, grouped by the innermost "
                                 "frame that is not the allocator's and by size; largest difference first"));

    auto* top = new QHBoxLayout;
    top->addWidget(m_pick);
    top->addWidget(m_status, 1);
    auto* tables = new QSplitter(Qt::Horizontal, this);
    tables->addWidget(m_summary);
    tables->addWidget(m_differences);
    tables->setStretchFactor(1, 2);
    auto* split = new QSplitter(Qt::Vertical, this);
    split->addWidget(m_plot);
    split->addWidget(tables);
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(4, 4, 4, 4);
    layout->addLayout(top);
    layout->addWidget(split, 1);
    // The curves need a pyramid over each trace: built when the view is on screen.
    m_curves = new DeferredRebuild(this, [this] { plotCurves(); });
    m_curves->watch(m_plot);
    refresh();
}

void CompareView::setData(const ExplorerDataPtr& data)
{
    m_data = data;
    m_pick->setEnabled(bool(data));
    refresh();
}

void CompareView::compareWith(const QString& path)
{
    m_otherPath = path;
    m_other = {};
    const int ordinal = m_data ? m_data->device().device : -1;
    m_status->setText(tr("Loading and analysing %1\u2026").arg(QFileInfo(path).fileName().toHtmlEscaped()));
    m_job->start(
        [path, ordinal](BackgroundJob::Control& control) {
            Other o;
            try {
                LoadOptions options;
                options.cancel = control.cancelFlag();
                o.trace = Loader::load(path.toStdString(), options);
                const auto& devs = o.trace->snapshot.devices;
                if (devs.empty())
                    throw LoadError(path.toStdString(), LoadError::kNoOffset, "a trace with at least one device");
                o.deviceIndex = 0; // the same device ordinal when the other file has it
                for (size_t i = 0; i < devs.size(); ++i)
                    if (devs[i].device == ordinal)
                        o.deviceIndex = i;
                o.analysis = std::make_shared<const DeviceAnalysis>(
                    analyzeDevice(*o.trace, o.deviceIndex, {control.cancelFlag()}));
            } catch (const std::exception& e) { // LoadCancelled too: its result is dropped
                o = {};
                o.error = QString::fromUtf8(e.what());
            }
            return o;
        },
        [this](const Other& other) {
            m_other = other;
            refresh();
            emit comparisonReady();
        });
}

bool CompareView::isLoading() const
{
    return m_job->isRunning();
}

QString CompareView::statusText() const
{
    return m_status->text();
}

void CompareView::refresh()
{
    m_comparison.reset();
    m_summary->setRowCount(0);
    m_differences->setRowCount(0);
    if (!m_other.error.isEmpty()) {
        m_status->setText(QStringLiteral("<span style='color:#b00'>%1</span>").arg(m_other.error.toHtmlEscaped()));
    } else if (!m_data) {
        m_status->setText(tr("Open a file first; then compare it with another one."));
    } else if (!m_other.trace) {
        if (!m_job->isRunning())
            m_status->setText(tr("Pick another snapshot to compare with this one."));
    } else {
        m_comparison = Comparison::compute({m_data->trace.get(), m_data->deviceIndex, &m_data->analysis},
                                           {m_other.trace.get(), m_other.deviceIndex, m_other.analysis.get()});
        const Comparison& c = *m_comparison;
        m_status->setText(tr("<b>%1</b> (device %2) against <b>%3</b> (device %4): peak %5 \u2192 %6 (%7)")
                              .arg(QFileInfo(QString::fromStdString(m_data->trace->snapshot.path)).fileName().toHtmlEscaped())
                              .arg(m_data->device().device)
                              .arg(QFileInfo(m_otherPath).fileName().toHtmlEscaped())
                              .arg(m_other.trace->snapshot.devices[m_other.deviceIndex].device)
                              .arg(formatBytesQ(c.peakA), formatBytesQ(c.peakB), signedBytes(c.peakB - c.peakA)));
        auto row = [&](const QString& name, const QString& a, const QString& b, const QString& d) {
            const int r = m_summary->rowCount();
            m_summary->insertRow(r);
            m_summary->setItem(r, 0, cell(name));
            m_summary->setItem(r, 1, cell(a, true));
            m_summary->setItem(r, 2, cell(b, true));
            m_summary->setItem(r, 3, cell(d, true));
        };
        auto bytesRow = [&](const QString& name, int64_t a, int64_t b) {
            row(name, formatBytesQ(a), formatBytesQ(b),
                a == b ? QStringLiteral("=") : signedBytes(b - a) + QStringLiteral("  ") + percent(a, b));
        };
        bytesRow(tr("Peak allocated"), c.peakA, c.peakB);
        if (c.reservedRecordedA && c.reservedRecordedB)
            bytesRow(tr("Peak reserved"), c.reservedA, c.reservedB);
        else // a CPU recording has no allocator's reservations to compare
            row(tr("Peak reserved"), c.reservedRecordedA ? formatBytesQ(c.reservedA) : tr("not recorded"),
                c.reservedRecordedB ? formatBytesQ(c.reservedB) : tr("not recorded"), QString());
        for (TensorCategory cat : categoryStackOrder())
            if (c.categoriesA[size_t(cat)] || c.categoriesB[size_t(cat)])
                bytesRow(QStringLiteral("  ") + categoryDisplayName(cat), c.categoriesA[size_t(cat)], c.categoriesB[size_t(cat)]);
        row(tr("Iterations"), QString::number(c.iterationsA), QString::number(c.iterationsB), QString());
        row(tr("OOMs"), QString::number(c.oomsA), QString::number(c.oomsB), QString());
        m_summary->resizeColumnsToContents();

        const size_t shown = std::min<size_t>(c.differences.size(), 100);
        m_differences->setRowCount(int(shown));
        for (size_t i = 0; i < shown; ++i) {
            const SignatureDiff& d = c.differences[i];
            const int r = int(i);
            m_differences->setItem(r, 0, cell(formatBytesQ(d.size), true));
            m_differences->setItem(r, 1, cell(QLocale().toString(qlonglong(d.countA)), true));
            m_differences->setItem(r, 2, cell(QLocale().toString(qlonglong(d.countB)), true));
            m_differences->setItem(r, 3, cell(signedBytes(d.bytesDelta()), true));
            m_differences->setItem(r, 4, cell(d.frame.empty() ? tr("(no frames)") : QString::fromStdString(d.frame)));
        }
        m_differences->resizeColumnsToContents();
    }
    m_curves->request();
}

void CompareView::plotCurves()
{
    m_plot->clearGraphs();
    auto add = [&](const MemoryTimeline& tl, const QString& name, const QColor& color) {
        const size_t n = tl.allocated.size();
        if (n == 0)
            return;
        const MinMaxPyramid pyramid(tl.allocated);
        QVector<double> keys, values;
        for (size_t i : pyramid.downsample(tl.allocated, 0, n, 1500)) {
            keys.push_back(100.0 * double(i + 1) / double(n));
            values.push_back(double(tl.allocated[i]));
        }
        QCPGraph* g = m_plot->addGraph();
        g->setName(name);
        g->setLineStyle(QCPGraph::lsStepLeft);
        // One pixel, aliased: step lines are axis-aligned, and a wider or antialiased pen
        // sends thousands of segments through QStroker (30 ms a replot on a million events).
        g->setPen(QPen(color, 1));
        g->setAntialiased(false);
        g->setAdaptiveSampling(false);
        g->setData(keys, values, true);
    };
    if (m_data)
        add(m_data->timeline(), tr("this file"), QColor(31, 119, 180));
    if (m_other.trace)
        add(m_other.trace->timelines[m_other.deviceIndex], QFileInfo(m_otherPath).fileName(), QColor(214, 39, 40));
    m_plot->rescaleAxes();
    m_plot->xAxis->setRange(0, 100);
    m_plot->yAxis->setRangeLower(0);
    m_plot->yAxis->setRangeUpper(m_plot->yAxis->range().upper * 1.1 + 1);
    // Drawn into the buffers now: this can run in the plot's own paint event.
    m_plot->replot(QCustomPlot::rpQueuedRefresh);
}

} // namespace headroom
