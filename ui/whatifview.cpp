// SPDX-License-Identifier: MIT
#include "ui/whatifview.h"

#include "ui/whatifpanel.h"

#include <QVBoxLayout>

namespace headroom {

WhatIfView::WhatIfView(Selection*, QWidget* parent)
    : QWidget(parent)
    , m_panel(new WhatIfPanel(this))
{
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->addWidget(m_panel);
    connect(m_panel, &WhatIfPanel::settingsChanged, this, &WhatIfView::settingsChanged);
}

void WhatIfView::setData(const ExplorerDataPtr& data)
{
    if (data == m_data)
        return;
    m_data = data;
    if (!data)
        return; // keep the last projection until the new analysis arrives
    // The panel shares the explorer's analysis (an aliasing pointer keeps the data alive).
    m_panel->setTrace(data->trace, int(data->deviceIndex),
                      std::shared_ptr<const DeviceAnalysis>(data, &data->analysis));
    // The device the file (an OOM record) or the preferences say; settings saved with
    // the trace, restored next, win.
    if (data->capacity.bytes > 0)
        m_panel->setCapacity(data->capacity.bytes);
    if (!m_pending.isEmpty()) {
        m_panel->restoreSettings(m_pending);
        m_pending.clear();
    }
}

} // namespace headroom
