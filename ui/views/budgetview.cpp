// SPDX-License-Identifier: MIT
#include "ui/views/budgetview.h"

#include "core/budget/budgetrecorder.h"
#include "core/budget/openbudgetstore.h"
#include "core/util/sha256.h"
#include "core/util/units.h"
#include "ui/explorer/backgroundjob.h"
#include "ui/explorer/deferredrebuild.h"
#include "ui/plot/byteaxisticker.h"

#include <qcustomplot.h>

#include <algorithm>
#include <functional>

#include <QComboBox>
#include <QFileDialog>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QSettings>
#include <QSplitter>
#include <QTableWidget>
#include <QVBoxLayout>

namespace headroom {

namespace {

constexpr const char* kStoreKey = "budget/store";
enum Column { WhenColumn, FileColumn, DeviceColumn, PeakColumn, DevicePeakColumn, FreeColumn, StepColumn, OomColumn, VerdictColumn, ColumnCount };

QString bytesText(int64_t b) { return QString::fromStdString(formatBytes(b)); }

/// A run's verdict in the table: what it lacks to validate its configuration.
QString verdictText(RunShortfall s)
{
    switch (s) {
    case RunShortfall::Oomed: return BudgetView::tr("ran out of memory");
    case RunShortfall::NoWorstCaseDeclared: return BudgetView::tr("no worst case declared");
    case RunShortfall::StepSizesUnknown: return BudgetView::tr("step sizes not recorded");
    case RunShortfall::NotWorstCase: return BudgetView::tr("not its worst-case step");
    case RunShortfall::NoCapacity: return BudgetView::tr("no capacity known");
    case RunShortfall::OverMargin: return BudgetView::tr("within capacity, not the margin");
    case RunShortfall::None: break;
    }
    return BudgetView::tr("validates");
}

/// The plot's x: the runs in the order they were recorded (times are text; the order is
/// what the history is about), the open file after them when the store does not hold it.
QVector<double> indices(size_t n, size_t from = 0)
{
    QVector<double> x;
    for (size_t i = 0; i < n; ++i)
        x << double(from + i);
    return x;
}

} // namespace

BudgetView::BudgetView(Selection*, QWidget* parent)
    : QWidget(parent)
    , m_store(new QLineEdit(this))
    , m_browse(new QPushButton(tr("Open\u2026"), this))
    , m_record(new QPushButton(tr("Record this file"), this))
    , m_config(new QComboBox(this))
    , m_status(new QLabel(this))
    , m_plot(new QCustomPlot(this))
    , m_table(new QTableWidget(0, ColumnCount, this))
    , m_job(new BackgroundJob(this))
{
    m_store->setPlaceholderText(tr("A budget store: an SQLite file, or postgresql://user@host/db"));
    m_store->setToolTip(tr("Every job of a team records into one store (docs/budget.md); the password of a URL "
                           "comes from PGPASSWORD or ~/.pgpass and is never shown"));
    m_store->setText(QSettings().value(kStoreKey).toString());
    m_record->setToolTip(tr("Add this file's runs (one per device) to the store, as headroom-cli budget record does"));
    m_config->setSizeAdjustPolicy(QComboBox::AdjustToMinimumContentsLengthWithIcon);
    m_config->setMinimumContentsLength(12);
    m_status->setWordWrap(true);
    m_status->setTextInteractionFlags(Qt::TextSelectableByMouse);

    m_plot->setMinimumHeight(60); // the dock shares a tab group: it must not make the window taller
    m_plot->yAxis->setTicker(QSharedPointer<QCPAxisTicker>(new ByteAxisTicker));
    m_plot->xAxis->setLabel(tr("runs of this configuration, oldest first"));
    // The legend beside the plot, not over it: with few runs every point matters.
    m_plot->legend->setVisible(true);
    m_plot->axisRect()->insetLayout()->take(m_plot->legend);
    m_plot->plotLayout()->addElement(0, 1, m_plot->legend);
    m_plot->plotLayout()->setColumnStretchFactor(1, 0.001);
    m_plot->legend->setBorderPen(Qt::NoPen);
    for (QCPAxis* axis : {m_plot->xAxis, m_plot->yAxis})
        axis->grid()->setPen(QPen(QColor(0, 0, 0, 28), 0));

    m_table->setHorizontalHeaderLabels({tr("Recorded"), tr("File"), tr("Device"), tr("Peak allocated"),
                                        tr("On the device"), tr("Margin left"), tr("Largest step"), tr("OOM"), tr("Verdict")});
    m_table->horizontalHeaderItem(DevicePeakColumn)
        ->setToolTip(tr("What the run needs of the device as check --fit projects it (the CUDA context and the "
                        "allocator counted); the peak allocated where no projection could be made"));
    m_table->horizontalHeaderItem(FreeColumn)
        ->setToolTip(tr("The largest margin the run passes with, as check --fit judges it: the share of the "
                        "device, beyond what the CUDA context takes, that the high end of its projection leaves "
                        "free. A run validates when this is at least the policy's margin"));
    m_table->verticalHeader()->hide();
    m_table->horizontalHeader()->setStretchLastSection(true);
    m_table->setSelectionBehavior(QAbstractItemView::SelectRows);
    m_table->setEditTriggers(QAbstractItemView::NoEditTriggers);
    m_table->setWordWrap(false);

    connect(m_store, &QLineEdit::editingFinished, this, [this] { setStore(m_store->text().trimmed()); });
    connect(m_browse, &QPushButton::clicked, this, [this] {
        const QString path = QFileDialog::getSaveFileName(this, tr("Budget store"), m_store->text(),
                                                          tr("SQLite budget stores (*.db *.sqlite);;All files (*)"),
                                                          nullptr, QFileDialog::DontConfirmOverwrite);
        if (!path.isEmpty())
            setStore(path);
    });
    connect(m_record, &QPushButton::clicked, this, &BudgetView::recordOpenFile);
    connect(m_config, qOverload<int>(&QComboBox::activated), this, &BudgetView::showConfiguration);

    auto* top = new QHBoxLayout;
    top->addWidget(new QLabel(tr("Store:"), this));
    top->addWidget(m_store, 1);
    top->addWidget(m_browse);
    top->addWidget(m_record);
    auto* configRow = new QHBoxLayout;
    configRow->addWidget(new QLabel(tr("Configuration:"), this));
    configRow->addWidget(m_config, 1);
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(4, 4, 4, 4);
    layout->addLayout(top);
    layout->addLayout(configRow);
    layout->addWidget(m_status);
    auto* split = new QSplitter(Qt::Vertical, this);
    split->addWidget(m_plot);
    split->addWidget(m_table);
    split->setStretchFactor(0, 3);
    split->setStretchFactor(1, 2);
    // 3 : 2 from the start too: the table's size hint would otherwise leave the plot its minimum.
    split->setSizes({3000, 2000});
    layout->addWidget(split, 1);
    m_reread = new DeferredRebuild(this, [this] { read(); });
    m_reread->watch(m_plot);
    rebuild();
}

void BudgetView::setData(const ExplorerDataPtr& data)
{
    const bool newFile = !m_data || !data || m_data->trace != data->trace;
    m_data = data;
    if (newFile) {
        m_openRuns.clear();
        m_reread->request();
    }
    rebuild();
}

void BudgetView::setStore(const QString& store)
{
    m_store->setText(store);
    QSettings().setValue(kStoreKey, store);
    m_reread->request();
}

void BudgetView::recordOpenFile()
{
    if (m_data && !m_store->text().trimmed().isEmpty())
        read(true);
}

bool BudgetView::isBusy() const { return m_job->isRunning(); }

QString BudgetView::statusText() const { return m_status->text(); }

void BudgetView::read(bool recordOpenFile)
{
    const std::string store = m_store->text().trimmed().toStdString();
    if (store.empty()) {
        m_runs.clear();
        m_error.clear();
        m_storeName.clear();
        rebuild();
        return;
    }
    // The open file's runs (its hash and every device's analysis) are made once per file, not
    // again each time the store is read or the file recorded.
    std::shared_ptr<const LoadedTrace> trace = m_data && m_openRuns.empty() ? m_data->trace : nullptr;
    m_status->setText(recordOpenFile ? tr("Recording this file\u2026") : tr("Reading the store\u2026"));
    m_job->start(
        [store, trace, recordOpenFile, known = m_openRuns](BackgroundJob::Control&) {
            Read r;
            r.openRuns = known;
            try {
                if (trace) {
                    // The file's runs as `budget record` would store them: the open run's place.
                    BudgetRecordOptions o;
                    o.file = trace->snapshot.path;
                    o.fileHash = sha256OfFile(trace->snapshot.path);
                    r.openRuns = budgetRunsOf(trace, o);
                }
                auto s = openBudgetStore(store);
                r.name = QString::fromStdString(s->name());
                if (recordOpenFile)
                    for (const BudgetRun& run : r.openRuns)
                        s->add(run);
                r.runs = s->runs();
            } catch (const std::exception& e) {
                r.error = QString::fromUtf8(e.what());
            }
            return r;
        },
        [this](Read r) {
            m_runs = std::move(r.runs);
            m_openRuns = std::move(r.openRuns);
            m_error = r.error;
            m_storeName = r.name;
            rebuild();
            emit storeRead();
        });
}

QString BudgetView::openRunKey() const
{
    return m_openRuns.empty() ? QString() : QString::fromStdString(budgetGroupKey(m_openRuns.front(), m_policy));
}

std::optional<size_t> BudgetView::shownConfiguration() const
{
    const int i = m_config->currentIndex();
    return i >= 0 && size_t(i) < m_configs.size() ? std::optional<size_t>(size_t(i)) : std::nullopt;
}

void BudgetView::rebuild()
{
    m_record->setEnabled(m_data && !m_store->text().trimmed().isEmpty() && !m_job->isRunning());
    m_configs = assessBudget(m_runs, m_policy);
    const QString previous = m_config->currentText();
    m_config->clear();
    for (const ConfigStatus& s : m_configs)
        m_config->addItem(QString::fromStdString(s.key));
    // The open file's configuration first; else the one shown before.
    int pick = m_config->findText(openRunKey());
    if (pick < 0)
        pick = m_config->findText(previous);
    if (pick < 0 && !m_configs.empty())
        pick = 0;
    m_config->setCurrentIndex(pick);
    if (!m_error.isEmpty())
        m_status->setText(m_error);
    else if (m_store->text().trimmed().isEmpty())
        m_status->setText(tr("No budget store. Name an SQLite file (Open\u2026) or a team's postgresql:// URL to "
                             "see every recorded run of this configuration and whether it is validated."));
    showConfiguration(pick);
}

void BudgetView::showConfiguration(int index)
{
    m_plot->clearPlottables();
    m_plot->clearItems();
    m_table->setRowCount(0);
    // No runs to draw: no axes either (an empty plot's default range read "5 B").
    const bool runs = index >= 0 && size_t(index) < m_configs.size();
    for (QCPAxis* axis : {m_plot->xAxis, m_plot->yAxis})
        axis->setVisible(runs);
    m_plot->legend->setVisible(runs);
    if (!runs) {
        if (m_error.isEmpty() && !m_store->text().trimmed().isEmpty())
            m_status->setText(tr("%1: no runs recorded yet.").arg(m_storeName));
        m_plot->replot();
        return;
    }
    const ConfigStatus& s = m_configs[size_t(index)];
    QString text = QString::fromStdString(describeStatus(s));
    text += tr(". %n run(s), worst peak %1", "", int(s.runs.size())).arg(bytesText(s.worstPeak));
    if (s.worstDevicePeak != s.worstPeak)
        text += tr(" allocated, %1 on the device").arg(bytesText(s.worstDevicePeak));
    if (s.capacity)
        text += tr("; capacity %1 (room left %2)").arg(bytesText(*s.capacity), bytesText(*s.roomLeft()));
    if (!m_openRuns.empty() && QString::fromStdString(s.key) != openRunKey())
        text += tr(". The open file is another configuration.");
    m_status->setText(text);
    plot(s);
    fillTable(s);
}

void BudgetView::plot(const ConfigStatus& s)
{
    QVector<double> peaks, deviceX, deviceY, oomX, oomY, okX, okY, limitX, limitY;
    for (size_t i = 0; i < s.runs.size(); ++i) {
        peaks << double(s.runs[i].peakAllocated);
        if (s.runs[i].projected) {
            deviceX << double(i);
            deviceY << double(s.runs[i].projected->peakHigh); // the figure the margin is judged on
        }
        if (s.verdicts[i].judgedLimit) {
            limitX << double(i);
            limitY << double(*s.verdicts[i].judgedLimit);
        }
        if (s.runs[i].oom) {
            oomX << double(i);
            oomY << double(s.runs[i].peakAllocated);
        }
        if (s.verdicts[i].shortfall == RunShortfall::None) {
            okX << double(i);
            okY << double(s.runs[i].peakAllocated);
        }
    }
    auto* line = m_plot->addGraph();
    line->setName(tr("peak allocated"));
    line->setPen(QPen(QColor(60, 90, 160), 1.5));
    line->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssCircle, 6));
    line->setData(indices(s.runs.size()), peaks);
    if (!deviceX.isEmpty()) {
        auto* device = m_plot->addGraph();
        device->setName(tr("on the device (projected, high end)"));
        device->setPen(QPen(QColor(120, 60, 160), 1.5, Qt::DashLine));
        device->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssSquare, 6));
        device->setData(deviceX, deviceY);
    }
    auto marks = [this](const QVector<double>& x, const QVector<double>& y, const QString& name, QColor color,
                        QCPScatterStyle::ScatterShape shape) {
        if (x.isEmpty())
            return;
        auto* g = m_plot->addGraph();
        g->setName(name);
        g->setLineStyle(QCPGraph::lsNone);
        g->setScatterStyle(QCPScatterStyle(shape, color, color, 10));
        g->setData(x, y);
    };
    marks(okX, okY, tr("validates"), QColor(40, 150, 60), QCPScatterStyle::ssDisc);
    marks(oomX, oomY, tr("ran out of memory"), QColor(200, 40, 40), QCPScatterStyle::ssCross);
    // The open file where its configuration's history would place it (if not recorded yet).
    double xMax = double(std::max<size_t>(s.runs.size(), 1));
    for (const BudgetRun& open : m_openRuns) {
        if (budgetGroupKey(open, m_policy) != s.key)
            continue;
        size_t at = s.runs.size();
        for (size_t i = 0; i < s.runs.size(); ++i)
            if (s.runs[i].runId == open.runId)
                at = i;
        marks({double(at)}, {double(open.peakAllocated)},
              at < s.runs.size() ? tr("this file") : tr("this file (not recorded)"), QColor(230, 140, 20),
              QCPScatterStyle::ssDiamond);
        xMax = std::max(xMax, double(at + 1));
        break;
    }
    double yMax = double(std::max(s.worstPeak, s.worstDevicePeak));
    auto level = [&](std::optional<int64_t> bytes, const QString& name, QPen pen) {
        if (!bytes)
            return;
        auto* g = m_plot->addGraph();
        g->setName(name);
        g->setPen(pen);
        g->setData({-0.5, xMax - 0.5}, {double(*bytes), double(*bytes)});
        yMax = std::max(yMax, double(*bytes));
    };
    // Runs recorded against other capacities are judged against their own: so is the line.
    QVector<double> capX, capY;
    for (size_t i = 0; i < s.runs.size(); ++i)
        if (s.runs[i].capacity) {
            capX << double(i);
            capY << double(*s.runs[i].capacity);
        }
    if (std::adjacent_find(capY.begin(), capY.end(), std::not_equal_to<>()) == capY.end()) {
        level(s.capacity, tr("capacity %1").arg(s.capacity ? bytesText(*s.capacity) : QString()),
              QPen(QColor(200, 40, 40), 1.5, Qt::DashLine));
    } else {
        auto* g = m_plot->addGraph();
        g->setName(tr("each run's capacity"));
        g->setPen(QPen(QColor(200, 40, 40), 1.5, Qt::DashLine));
        g->setData(capX, capY);
        yMax = std::max(yMax, *std::max_element(capY.begin(), capY.end()));
    }
    // Each run's own limit at the policy's margin: a projected run keeps the margin on the
    // capacity less the CUDA context, as check --fit does, so the line is the verdict's.
    if (!limitX.isEmpty()) {
        auto* g = m_plot->addGraph();
        g->setName(tr("limit at the %1% margin").arg(m_policy.margin * 100.0, 0, 'f', 0));
        g->setPen(QPen(QColor(200, 120, 40), 1, Qt::DotLine));
        g->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssPlus, 8));
        if (limitX.size() == 1) { // one run: a level across the plot
            limitX = {-0.5, xMax - 0.5};
            limitY = {limitY[0], limitY[0]};
        }
        g->setData(limitX, limitY);
        yMax = std::max(yMax, *std::max_element(limitY.begin(), limitY.end()));
    }
    level(s.validatedPeak, tr("validated peak %1").arg(s.validatedPeak ? bytesText(*s.validatedPeak) : QString()),
          QPen(QColor(40, 150, 60), 1.5, Qt::DashDotLine));
    m_plot->xAxis->setRange(-0.5, xMax - 0.5);
    m_plot->yAxis->setRange(0, yMax * 1.1 + 1);
    QSharedPointer<QCPAxisTickerFixed> ticker(new QCPAxisTickerFixed);
    ticker->setTickStep(1.0);
    ticker->setScaleStrategy(QCPAxisTickerFixed::ssMultiples);
    m_plot->xAxis->setTicker(ticker);
    m_plot->replot();
}

void BudgetView::fillTable(const ConfigStatus& s)
{
    m_table->setRowCount(int(s.runs.size()));
    for (size_t i = 0; i < s.runs.size(); ++i) {
        const BudgetRun& r = s.runs[i];
        const QStringList cells = {
            QString::fromStdString(r.recordedAt),
            r.file.empty() ? tr("(run metric %1)").arg(QString::fromStdString(r.runId)) : QString::fromStdString(r.file),
            QString::number(r.device),
            bytesText(r.peakAllocated),
            r.projected ? bytesText(r.projected->peak) : tr("(not projected)"),
            s.verdicts[i].marginLeft ? QString::number(*s.verdicts[i].marginLeft * 100.0, 'f', 1) + QLatin1Char('%') : tr("unknown"),
            r.maxStepTokens ? QString::number(*r.maxStepTokens) : tr("unknown"),
            r.oom ? (r.oomIteration ? tr("iteration %1").arg(*r.oomIteration) : tr("yes")) : tr("no"),
            verdictText(s.verdicts[i].shortfall),
        };
        for (int c = 0; c < ColumnCount; ++c)
            m_table->setItem(int(i), c, new QTableWidgetItem(cells[c]));
    }
    m_table->resizeColumnsToContents();
}

} // namespace headroom
