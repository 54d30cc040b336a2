// SPDX-License-Identifier: MIT
#include "ui/views/ranksview.h"

#include "core/io/loader.h"
#include "core/util/loaderror.h"
#include "ui/explorer/backgroundjob.h"
#include "ui/plot/categorystyle.h"

#include <QFileDialog>
#include <QFileInfo>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QPushButton>
#include <QTableWidget>
#include <QVBoxLayout>

#include <algorithm>

namespace headroom {

namespace {
enum Column { RankColumn, DeviceColumn, FileColumn, PeakColumn, VsMedianColumn, ReservedColumn, OomColumn, ColumnCount };
constexpr int kRowRole = Qt::UserRole + 1;
} // namespace

RanksView::RanksView(Selection*, QWidget* parent)
    : QWidget(parent)
    , m_add(new QPushButton(tr("Add rank files\u2026"), this))
    , m_status(new QLabel(this))
    , m_table(new QTableWidget(0, ColumnCount, this))
    , m_job(new BackgroundJob(this))
{
    m_add->setToolTip(tr("Add the snapshots of the other ranks of this run (one file per process)"));
    m_status->setWordWrap(true);
    m_table->setHorizontalHeaderLabels(
        {tr("Rank"), tr("Device"), tr("File"), tr("Peak allocated"), tr("vs median"), tr("Reserved"), tr("OOMs")});
    m_table->verticalHeader()->hide();
    m_table->horizontalHeader()->setStretchLastSection(true);
    m_table->setSelectionBehavior(QAbstractItemView::SelectRows);
    m_table->setEditTriggers(QAbstractItemView::NoEditTriggers);
    connect(m_add, &QPushButton::clicked, this, [this] {
        const QStringList paths = QFileDialog::getOpenFileNames(this, tr("Add rank files"), QString(),
                                                                tr("Traces (*.pickle *.pkl *.gz *.json *.hrt);;All files (*)"));
        if (!paths.isEmpty())
            addFiles(paths);
    });
    connect(m_table, &QTableWidget::cellActivated, this, [this](int row, int) {
        const QTableWidgetItem* item = m_table->item(row, RankColumn);
        if (!item)
            return;
        const RankTable::Row& r = m_rows[size_t(item->data(kRowRole).toInt())];
        for (const auto& t : m_traces)
            if (t->snapshot.path == r.file)
                emit showRequested(QString::fromStdString(r.file), t, r.device);
    });
    connect(m_table, &QTableWidget::cellDoubleClicked, m_table, &QTableWidget::cellActivated);

    auto* top = new QHBoxLayout;
    top->addWidget(m_status, 1);
    top->addWidget(m_add);
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(4, 4, 4, 4);
    layout->addLayout(top);
    layout->addWidget(m_table, 1);
    rebuild();
}

void RanksView::setData(const ExplorerDataPtr& data)
{
    m_data = data;
    m_add->setEnabled(bool(data));
    if (!data)
        return;
    // Another rank of the same set keeps the set; an unrelated file starts a new one.
    const bool known = std::any_of(m_traces.begin(), m_traces.end(), [&](const auto& t) { return t == data->trace; });
    if (!known) {
        m_job->cancel(); // rank files still loading belong to the previous set
        m_pending.clear();
        m_traces = {data->trace};
        m_errors.clear();
    }
    rebuild();
}

void RanksView::addFiles(const QStringList& paths)
{
    for (const QString& p : paths)
        if (!m_pending.contains(p))
            m_pending << p;
    m_status->setText(tr("Loading %n rank file(s)\u2026", nullptr, int(m_pending.size())));
    m_job->start(
        [paths = m_pending](BackgroundJob::Control& control) {
            Loaded l;
            LoadOptions options;
            options.cancel = control.cancelFlag();
            for (const QString& p : paths) {
                try {
                    l.traces.push_back(Loader::load(p.toStdString(), options));
                } catch (const LoadCancelled&) {
                    break; // the result is dropped
                } catch (const std::exception& e) {
                    l.errors << QString::fromUtf8(e.what());
                }
            }
            return l;
        },
        [this](Loaded l) {
            m_pending.clear();
            for (auto& t : l.traces)
                if (std::none_of(m_traces.begin(), m_traces.end(), [&](const auto& x) { return x->snapshot.path == t->snapshot.path; }))
                    m_traces.push_back(std::move(t));
            m_errors = l.errors;
            rebuild();
            emit filesAdded();
        });
}

bool RanksView::isLoading() const
{
    return m_job->isRunning();
}

QString RanksView::statusText() const
{
    return m_status->text();
}

void RanksView::rebuild()
{
    m_rows = m_traces.empty() ? std::vector<RankTable::Row>{} : RankTable(m_traces).rows();
    std::vector<int64_t> peaks;
    for (const auto& r : m_rows)
        peaks.push_back(r.peakAllocatedBytes);
    std::sort(peaks.begin(), peaks.end());
    const int64_t median = peaks.empty()         ? 0
                           : peaks.size() % 2 ? peaks[peaks.size() / 2]
                                              : (peaks[peaks.size() / 2 - 1] + peaks[peaks.size() / 2]) / 2;
    const int64_t worst = peaks.empty() ? 0 : peaks.back();
    const std::string current = m_data ? m_data->trace->snapshot.path : std::string();
    const int currentDevice = m_data ? m_data->device().device : -1;

    m_table->setRowCount(int(m_rows.size()));
    for (int i = 0; i < int(m_rows.size()); ++i) {
        const RankTable::Row& r = m_rows[size_t(i)];
        auto set = [&](int col, const QString& text, bool right) {
            auto* item = new QTableWidgetItem(text);
            item->setData(kRowRole, i);
            if (right)
                item->setTextAlignment(Qt::AlignRight | Qt::AlignVCenter);
            if (r.peakAllocatedBytes == worst && m_rows.size() > 1)
                item->setForeground(QColor(190, 0, 0));
            if (r.file == current && r.device == currentDevice) {
                QFont f = item->font();
                f.setBold(true);
                item->setFont(f);
            }
            m_table->setItem(i, col, item);
        };
        const double vs = median > 0 ? 100.0 * double(r.peakAllocatedBytes - median) / double(median) : 0.0;
        set(RankColumn, QString::number(r.rank), true);
        set(DeviceColumn, QStringLiteral("%1 %2").arg(QString::fromStdString(r.deviceType)).arg(r.device), false);
        set(FileColumn, QFileInfo(QString::fromStdString(r.file)).fileName(), false);
        m_table->item(i, FileColumn)->setToolTip(QString::fromStdString(r.file));
        set(PeakColumn, formatBytesQ(r.peakAllocatedBytes), true);
        set(VsMedianColumn, QStringLiteral("%1%2%").arg(vs >= 0 ? QStringLiteral("+") : QString()).arg(vs, 0, 'f', 1), true);
        set(ReservedColumn, formatBytesQ(r.reservedBytes), true);
        set(OomColumn, QString::number(r.ooms), true);
    }
    m_table->resizeColumnsToContents();

    QString status = m_rows.size() > 1
                         ? tr("%1 ranks/devices: peaks from %2 to %3 (median %4); double-click a row to show it")
                               .arg(m_rows.size())
                               .arg(formatBytesQ(peaks.front()), formatBytesQ(worst), formatBytesQ(median))
                         : tr("One device. Add the other ranks' files to compare them.");
    if (!m_errors.isEmpty())
        status += QStringLiteral("\n") + tr("Not loaded: %1").arg(m_errors.join(QStringLiteral("; ")));
    m_status->setText(status);
}

} // namespace headroom
