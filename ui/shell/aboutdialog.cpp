// SPDX-License-Identifier: MIT
#include "ui/shell/aboutdialog.h"

#include "core/util/libraries.h"
#include "headroom_version.h" // HEADROOM_GIT_COMMIT, written at build time

#include <qcustomplot.h>

#include <QApplication>
#include <QDialogButtonBox>
#include <QLabel>
#include <QTextBrowser>
#include <QVBoxLayout>

namespace headroom {

QString AboutDialog::librariesHtml()
{
    struct Lib {
        QString name, version, licence, note;
    };
    std::vector<Lib> libs = {
        {QStringLiteral("Qt"), QString::fromLatin1(qVersion()), QStringLiteral("LGPL-3.0-only"),
         QObject::tr("built with %1").arg(QStringLiteral(QT_VERSION_STR))},
        {QStringLiteral("QCustomPlot"), QStringLiteral(QCUSTOMPLOT_VERSION_STR), QStringLiteral("GPL-3.0-or-later"),
         QObject::tr("the plots; because of it the program as distributed is under the GPL 3")},
    };
    for (const LibraryInfo& l : coreLibraries())
        libs.push_back({QString::fromStdString(l.name), QString::fromStdString(l.version), QString::fromStdString(l.licence), {}});
    QString html = QStringLiteral("<table cellspacing=\"0\" cellpadding=\"3\"><tr><th align=\"left\">%1</th><th align=\"left\">%2</th>"
                                  "<th align=\"left\">%3</th><th align=\"left\"></th></tr>")
                       .arg(QObject::tr("Library"), QObject::tr("Version"), QObject::tr("Licence"));
    for (const Lib& l : libs)
        html += QStringLiteral("<tr><td>%1</td><td>%2</td><td>%3</td><td>%4</td></tr>")
                    .arg(l.name.toHtmlEscaped(), l.version.toHtmlEscaped(), l.licence.toHtmlEscaped(), l.note.toHtmlEscaped());
    html += QStringLiteral("</table>");
    return html;
}

AboutDialog::AboutDialog(QWidget* parent)
    : QDialog(parent)
{
    setWindowTitle(tr("About Headroom"));
    setObjectName(QStringLiteral("aboutDialog"));
    auto* icon = new QLabel(this);
    icon->setPixmap(QApplication::windowIcon().pixmap(64, 64));
    auto* text = new QTextBrowser(this);
    text->setOpenExternalLinks(true);
    text->setFrameShape(QFrame::NoFrame);
    text->setHtml(tr("<h2>Headroom %1</h2>"
                     "<p>A memory-profile explorer for PyTorch training runs: memory over time by tensor category "
                     "and training phase, what was alive at the peak and which code allocated it, the diagnosis, "
                     "and what would make the job fit.</p>"
                     "<p>Commit %2 \u00B7 running on Qt %3</p>"
                     "<p>Headroom's own code is under the MIT licence. It uses:</p>%4"
                     "<p>The licence texts are installed in <tt>share/doc/headroom</tt>.</p>")
                      .arg(QStringLiteral(HEADROOM_VERSION), QStringLiteral(HEADROOM_GIT_COMMIT),
                           QString::fromLatin1(qVersion()), librariesHtml()));
    auto* buttons = new QDialogButtonBox(QDialogButtonBox::Close, this);
    connect(buttons, &QDialogButtonBox::rejected, this, &QDialog::reject);
    auto* layout = new QVBoxLayout(this);
    layout->addWidget(icon);
    layout->addWidget(text, 1);
    layout->addWidget(buttons);
    resize(620, 480);
}

} // namespace headroom
