// SPDX-License-Identifier: MIT
#include "ui/whatif/whatifview.h"

#include "ui/whatif/allocatorsection.h"
#include "ui/whatif/whatifpanel.h"

#include <QApplication>
#include <QScrollArea>
#include <QVBoxLayout>

#include <vector>

namespace headroom {

WhatIfView::WhatIfView(Selection*, QWidget* parent)
    : QWidget(parent)
    , m_panel(new WhatIfPanel(this))
{
    // The panel scrolls when its dock is short: its own minimum height would otherwise
    // set the window's, taller than a laptop screen.
    m_scroll = new QScrollArea(this);
    m_scroll->setWidget(m_panel);
    m_scroll->setWidgetResizable(true);
    m_scroll->setFrameShape(QFrame::NoFrame);
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->addWidget(m_scroll);
    connect(m_panel, &WhatIfPanel::settingsChanged, this, &WhatIfView::settingsChanged);
}

void WhatIfView::render(QCPPainter* painter, const QSize& size)
{
    // The allocator replay waits for the panel to be seen; a picture of it needs its answer.
    m_panel->allocatorSection()->replayNow();
    // The status label's new size: only the layout requests, not every pending event (a
    // full processEvents here could run a click or a new analysis in the middle of an export).
    QCoreApplication::sendPostedEvents(nullptr, QEvent::LayoutRequest);
    // A hidden dock's scroll areas (this one and the levers') keep the scroll bars of their
    // last on-screen size until a layout pass: an export is drawn without them.
    struct Policies {
        QScrollArea* area;
        Qt::ScrollBarPolicy vertical, horizontal;
    };
    std::vector<Policies> saved;
    for (QScrollArea* a : findChildren<QScrollArea*>()) {
        saved.push_back({a, a->verticalScrollBarPolicy(), a->horizontalScrollBarPolicy()});
        a->setVerticalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
        a->setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
    }
    ExplorerView::render(painter, size);
    for (const Policies& p : saved) {
        p.area->setVerticalScrollBarPolicy(p.vertical);
        p.area->setHorizontalScrollBarPolicy(p.horizontal);
    }
}

void WhatIfView::prepareExport()
{
    m_panel->finishCalibration(); // the report quotes the projection
    m_panel->allocatorSection()->prepare();
}

void WhatIfView::setData(const ExplorerDataPtr& data)
{
    if (data == m_data)
        return;
    // The same device analysed again for another capacity (one chosen here): the calibration,
    // the levers and the stated values stay; only the capacity and the replay's verdict change.
    const bool sameDevice = data && m_data && data->trace == m_data->trace && data->deviceIndex == m_data->deviceIndex;
    m_data = data;
    if (!data)
        return; // keep the last projection until the new analysis arrives
    // The panel shares the explorer's analysis (an aliasing pointer keeps the data alive).
    if (!sameDevice)
        m_panel->setTrace(data->trace, int(data->deviceIndex),
                          std::shared_ptr<const DeviceAnalysis>(data, &data->analysis), data->whatIf);
    // The file's capacity as every view has it (the OOM record's, the user's, the
    // preferences'); settings saved with the trace, restored next, win and become the file's.
    m_panel->setCapacity(data->capacity.bytes);
    m_panel->setAllocatorVerdict(data->allocator);
    if (!m_pending.isEmpty()) {
        m_panel->restoreSettings(m_pending);
        m_pending.clear();
    }
}

} // namespace headroom
