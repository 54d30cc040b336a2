// SPDX-License-Identifier: MIT
#include "ui/views/breakdownview.h"

#include "ui/plot/byteaxisticker.h"
#include "ui/plot/categorystyle.h"
#include "ui/plot/plotstyle.h"

#include <qcustomplot.h>

#include <QLocale>
#include <QEvent>
#include <QFontMetrics>
#include <QVBoxLayout>

namespace headroom {

namespace {

struct Bar {
    QString name;
    int64_t bytes;
    QColor color;
};

void fillRect(QCustomPlot* plot, QCPAxisRect* rect, const std::vector<Bar>& bars, int64_t total, const QColor& text)
{
    QCPAxis* keyAxis = rect->axis(QCPAxis::atLeft);
    QCPAxis* valueAxis = rect->axis(QCPAxis::atBottom);
    auto ticker = QSharedPointer<QCPAxisTickerText>::create();
    double maxValue = 1;
    // Largest on top: the key axis runs upwards, so the first bar gets the highest key.
    for (size_t i = 0; i < bars.size(); ++i) {
        const double key = double(bars.size() - i);
        auto* b = new QCPBars(keyAxis, valueAxis);
        b->setWidth(0.7);
        b->setPen(Qt::NoPen);
        b->setBrush(bars[i].color);
        b->addData(key, double(bars[i].bytes));
        b->setAntialiased(false);
        ticker->addTick(key, bars[i].name);
        maxValue = std::max(maxValue, double(bars[i].bytes));
        auto* label = new QCPItemText(plot);
        label->setClipToAxisRect(false);
        label->position->setAxes(valueAxis, keyAxis);
        label->position->setType(QCPItemPosition::ptPlotCoords);
        label->position->setCoords(double(bars[i].bytes), key);
        label->setPositionAlignment(Qt::AlignLeft | Qt::AlignVCenter);
        label->setPadding(QMargins(4, 0, 0, 0));
        label->setColor(text);
        const double share = total > 0 ? 100.0 * double(bars[i].bytes) / double(total) : 0.0;
        label->setText(QStringLiteral("%1  (%2%)").arg(formatBytesQ(bars[i].bytes)).arg(share, 0, 'f', 1));
    }
    keyAxis->setTicker(ticker);
    keyAxis->setRange(0.3, double(bars.size()) + 0.7);
    // The labels stand in a right margin of their own, never clipped by the axis rect.
    const int labelPx = QFontMetrics(plot->font()).horizontalAdvance(QStringLiteral("000.00 MiB  (100.0%)")) + 16;
    rect->setAutoMargins(QCP::msLeft | QCP::msTop | QCP::msBottom);
    rect->setMargins(QMargins(0, 0, labelPx, 0));
    valueAxis->setRange(0, maxValue * 1.02);
    // The numbers are on the bars; a byte scale in a narrow pane only collides.
    valueAxis->setTickLabels(false);
    valueAxis->setTicks(false);
}

} // namespace

BreakdownView::BreakdownView(Selection*, QWidget* parent)
    : QWidget(parent)
    , m_plot(new QCustomPlot(this))
{
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->addWidget(m_plot);
    m_plot->setMinimumSize(300, 200);

    m_plot->plotLayout()->clear();
    m_title = new QCPTextElement(m_plot, QString(), QFont(font().family(), font().pointSize() + 1, QFont::Bold));
    m_plot->plotLayout()->addElement(0, 0, m_title);
    auto* grid = new QCPLayoutGrid;
    m_plot->plotLayout()->addElement(1, 0, grid);
    m_plot->plotLayout()->setRowStretchFactor(0, 0.001);
    m_categoryRect = new QCPAxisRect(m_plot);
    m_phaseRect = new QCPAxisRect(m_plot);
    m_userRect = new QCPAxisRect(m_plot); // laid out only with the user's categories
    m_userTitle = new QCPTextElement(m_plot, tr("by your categories"), QFont(font().family(), font().pointSize()));
    m_userTitle->setObjectName(QStringLiteral("sub"));
    auto* catTitle = new QCPTextElement(m_plot, tr("by tensor category"), QFont(font().family(), font().pointSize()));
    auto* phaseTitle = new QCPTextElement(m_plot, tr("by phase of birth"), QFont(font().family(), font().pointSize()));
    catTitle->setObjectName(QStringLiteral("sub"));
    phaseTitle->setObjectName(QStringLiteral("sub"));
    grid->addElement(0, 0, catTitle);
    grid->addElement(0, 1, phaseTitle);
    grid->addElement(1, 0, m_categoryRect);
    grid->addElement(1, 1, m_phaseRect);
    grid->setRowStretchFactor(0, 0.001);
    for (QCPAxisRect* r : {m_categoryRect, m_phaseRect, m_userRect}) {
        r->axis(QCPAxis::atBottom)->setTicker(QSharedPointer<QCPAxisTicker>(new ByteAxisTicker));
        r->axis(QCPAxis::atLeft)->grid()->setVisible(false);
        r->axis(QCPAxis::atLeft)->setTickLength(0, 0);
        r->axis(QCPAxis::atLeft)->setSubTicks(false);
        r->setupFullAxesBox(false);
        r->axis(QCPAxis::atTop)->setVisible(false);
        r->axis(QCPAxis::atRight)->setVisible(false);
    }
    showUserColumn(false);
    applyPalette();
    rebuild();
}

BreakdownView::~BreakdownView() = default;

void BreakdownView::showUserColumn(bool on)
{
    // Out of the layout the rect and its axes must not draw either (they would at 0,0).
    m_userRect->setVisible(on);
    m_userTitle->setVisible(on);
    for (QCPAxis* axis : m_userRect->axes())
        axis->setVisible(on && (axis->axisType() == QCPAxis::atLeft || axis->axisType() == QCPAxis::atBottom));
}

void BreakdownView::setUserCategories(std::shared_ptr<const UserCategories> rules)
{
    auto* grid = static_cast<QCPLayoutGrid*>(m_plot->plotLayout()->element(1, 0));
    if (rules && !m_rules) {
        grid->addElement(0, 2, m_userTitle);
        grid->addElement(1, 2, m_userRect);
    } else if (!rules && m_rules) {
        grid->take(m_userTitle);
        grid->take(m_userRect);
        grid->simplify();
    }
    showUserColumn(rules != nullptr);
    m_rules = std::move(rules);
    rebuild();
}

void BreakdownView::fillUserCategories(const QColor& text)
{
    const UserCategoryTotals g = userCategoriesAt(*m_data->trace, m_data->deviceIndex, m_data->analysis, m_event, *m_rules);
    m_userGroups = g.groups;
    std::vector<Bar> bars;
    size_t auto_ = 0;
    for (const UserCategoryGroup& u : m_userGroups) {
        // A rule without its own colour takes one of the phase palette's, in turn.
        const QColor c = u.color.empty() ? phaseColor(Phase(auto_++ % kPhaseCount)) : QColor(QString::fromStdString(u.color));
        bars.push_back({QString::fromStdString(u.name), u.bytes, c});
    }
    bars.push_back({tr("(no rule)"), g.unclaimedBytes, QColor(0x9e, 0x9e, 0x9e)});
    fillRect(m_plot, m_userRect, bars, g.bytes, text);
}

void BreakdownView::setData(const ExplorerDataPtr& data)
{
    m_data = data;
    rebuild();
}

void BreakdownView::selectionChanged(const SelectionState& state, Selection::Fields fields)
{
    m_selection = state;
    if (fields & (Selection::Event | Selection::Range | Selection::Device))
        rebuild();
}

QString BreakdownView::heading() const
{
    return m_title->text();
}

void BreakdownView::rebuild()
{
    m_plot->clearPlottables();
    m_plot->clearItems();
    m_breakdown = Breakdown{};
    m_event = SelectionState::kNone;
    const QColor text = palette().color(QPalette::WindowText);
    if (!m_data) {
        m_title->setText(tr("Breakdown: waiting for a file and its analysis"));
        m_plot->replot(QCustomPlot::rpQueuedReplot);
        return;
    }
    const MemoryTimeline& tl = m_data->timeline();
    QString where;
    if (m_selection.hasRange()) {
        m_event = maxEventInRange(tl, m_selection.rangeFirst, m_selection.rangeLast);
        where = tr("maximum in events %1\u2013%2 (at event %3)")
                    .arg(m_selection.rangeFirst)
                    .arg(m_selection.rangeLast)
                    .arg(m_event);
    } else {
        m_event = m_selection.hasEvent() ? m_selection.event : tl.peakEventIndex;
        where = m_event == tl.peakEventIndex ? tr("at the peak (event %1)").arg(m_event) : tr("at event %1").arg(m_event);
    }
    m_breakdown = m_data->analysis.breakdownAt(tl, m_event);
    m_title->setText(tr("Live memory %1: %2 in %3 allocations")
                         .arg(where, formatBytesQ(m_breakdown.total), QLocale().toString(qlonglong(m_breakdown.count))));

    std::vector<Bar> cats, phases;
    for (TensorCategory c : categoryStackOrder())
        if (m_breakdown.byCategory[size_t(c)] > 0)
            cats.push_back({categoryDisplayName(c), m_breakdown.byCategory[size_t(c)], categoryColor(c)});
    std::stable_sort(cats.begin(), cats.end(), [](const Bar& a, const Bar& b) { return a.bytes > b.bytes; });
    for (size_t p = 0; p < kPhaseCount; ++p)
        if (m_breakdown.byPhase[p] > 0)
            phases.push_back({phaseDisplayName(Phase(p)), m_breakdown.byPhase[p], phaseColor(Phase(p))});
    std::stable_sort(phases.begin(), phases.end(), [](const Bar& a, const Bar& b) { return a.bytes > b.bytes; });
    fillRect(m_plot, m_categoryRect, cats, m_breakdown.total, text);
    fillRect(m_plot, m_phaseRect, phases, m_breakdown.total, text);
    m_userGroups.clear();
    if (m_rules)
        fillUserCategories(text);
    m_plot->replot(QCustomPlot::rpQueuedReplot);
}

void BreakdownView::render(QCPPainter* painter, const QSize& size)
{
    m_plot->toPainter(painter, size.width(), size.height());
}

void BreakdownView::changeEvent(QEvent* event)
{
    QWidget::changeEvent(event);
    if (event->type() == QEvent::PaletteChange) {
        applyPalette();
        rebuild();
    }
}

void BreakdownView::applyPalette()
{
    const QPalette pal = palette();
    const QColor text = pal.color(QPalette::WindowText);
    m_plot->setBackground(pal.brush(QPalette::Base));
    m_title->setTextColor(text);
    for (auto* el : m_plot->findChildren<QCPTextElement*>())
        el->setTextColor(text);
    for (QCPAxisRect* r : {m_categoryRect, m_phaseRect, m_userRect}) {
        QColor grid = text;
        grid.setAlpha(40);
        for (QCPAxis* axis : r->axes())
            applyAxisColors(axis, text, QPen(grid, 1, Qt::DotLine));
    }
    m_plot->replot(QCustomPlot::rpQueuedReplot);
}

} // namespace headroom
