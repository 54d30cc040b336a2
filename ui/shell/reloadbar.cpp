// SPDX-License-Identifier: MIT
#include "ui/shell/reloadbar.h"

#include <QFileInfo>
#include <QHBoxLayout>
#include <QLabel>
#include <QPushButton>
#include <QToolButton>

namespace headroom {

ReloadBar::ReloadBar(QWidget* parent)
    : QFrame(parent)
    , m_text(new QLabel(this))
{
    setObjectName(QStringLiteral("reloadBar"));
    setFrameShape(QFrame::StyledPanel);
    setAutoFillBackground(true);
    QPalette pal = palette();
    // A calm information blue that reads on light and dark palettes alike.
    pal.setColor(QPalette::Window, QColor(61, 174, 233, 60));
    setPalette(pal);

    auto* reload = new QPushButton(tr("&Reload"), this);
    reload->setObjectName(QStringLiteral("reloadBarReload"));
    auto* always = new QPushButton(tr("&Always Reload"), this);
    always->setObjectName(QStringLiteral("reloadBarAlways"));
    always->setToolTip(tr("Reload by itself whenever the file changes (Settings \u25B8 Preferences)"));
    auto* close = new QToolButton(this);
    close->setObjectName(QStringLiteral("reloadBarClose"));
    close->setText(QStringLiteral("\u2715"));
    close->setAutoRaise(true);
    close->setToolTip(tr("Keep showing the loaded version"));

    auto* layout = new QHBoxLayout(this);
    layout->setContentsMargins(8, 4, 4, 4);
    layout->addWidget(m_text, 1);
    layout->addWidget(reload);
    layout->addWidget(always);
    layout->addWidget(close);

    // The window shows and hides the bar (it lives in a tool bar, whose layout owns the
    // visibility of its widgets).
    connect(reload, &QPushButton::clicked, this, [this] {
        emit dismissed();
        emit reloadRequested();
    });
    connect(always, &QPushButton::clicked, this, [this] {
        emit dismissed();
        emit alwaysReloadRequested();
    });
    connect(close, &QToolButton::clicked, this, &ReloadBar::dismissed);
}

void ReloadBar::showFor(const QString& path)
{
    m_text->setText(tr("<b>%1</b> changed on disk. The views show the version loaded before.")
                        .arg(QFileInfo(path).fileName().toHtmlEscaped()));
}

} // namespace headroom
