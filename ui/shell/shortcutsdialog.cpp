// SPDX-License-Identifier: MIT
#include "ui/shell/shortcutsdialog.h"

#include <QAction>
#include <QDialogButtonBox>
#include <QHeaderView>
#include <QLineEdit>
#include <QMenu>
#include <QMenuBar>
#include <QTableWidget>
#include <QVBoxLayout>

namespace headroom {

namespace {

struct Row {
    QString action;
    QString keys;
    QString where;
};

QString plain(QString text)
{
    text.remove(QLatin1Char('&'));
    if (text.endsWith(QStringLiteral("\u2026")))
        text.chop(1);
    return text;
}

void collect(const QMenu* menu, const QString& path, std::vector<Row>& rows)
{
    for (QAction* a : menu->actions()) {
        if (a->isSeparator())
            continue;
        if (a->menu()) {
            collect(a->menu(), path + QStringLiteral(" \u25B8 ") + plain(a->text()), rows);
            continue;
        }
        QStringList keys;
        for (const QKeySequence& k : a->shortcuts())
            keys << k.toString(QKeySequence::NativeText);
        if (!keys.isEmpty())
            rows.push_back({plain(a->text()), keys.join(QStringLiteral(", ")), path});
    }
}

} // namespace

ShortcutsDialog::ShortcutsDialog(const QMenuBar* menus, QWidget* parent)
    : QDialog(parent)
    , m_table(new QTableWidget(this))
{
    setWindowTitle(tr("Keyboard Shortcuts"));
    setObjectName(QStringLiteral("shortcutsDialog"));
    std::vector<Row> rows;
    for (QAction* a : menus->actions())
        if (a->menu())
            collect(a->menu(), plain(a->text()), rows);
    const QString timeline = tr("Timeline");
    const std::vector<Row> gestures = {
        {tr("Select an event"), tr("Click"), timeline},
        {tr("Select a range of events"), tr("Drag"), timeline},
        {tr("Zoom around the cursor"), tr("Wheel"), timeline},
        {tr("Pan"), tr("Right or middle drag"), timeline},
        {tr("By category / by allocation"), QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_M).toString(QKeySequence::NativeText), timeline},
        {tr("Whole run"), tr("Double click on the minimap"), timeline},
        {tr("Step through the events"), tr("Up, Down"), tr("Allocator (event list)")},
        {tr("Remove the selected bookmark"), QKeySequence(QKeySequence::Delete).toString(QKeySequence::NativeText), tr("Notes")},
        {tr("Open a file"), tr("Drop it on the window"), tr("Window")},
    };
    rows.insert(rows.end(), gestures.begin(), gestures.end());

    m_table->setColumnCount(3);
    m_table->setHorizontalHeaderLabels({tr("Action"), tr("Keys"), tr("Where")});
    m_table->setRowCount(int(rows.size()));
    for (size_t i = 0; i < rows.size(); ++i) {
        m_table->setItem(int(i), 0, new QTableWidgetItem(rows[i].action));
        m_table->setItem(int(i), 1, new QTableWidgetItem(rows[i].keys));
        m_table->setItem(int(i), 2, new QTableWidgetItem(rows[i].where));
    }
    m_table->setEditTriggers(QAbstractItemView::NoEditTriggers);
    m_table->setSelectionBehavior(QAbstractItemView::SelectRows);
    m_table->verticalHeader()->hide();
    m_table->horizontalHeader()->setStretchLastSection(true);
    m_table->resizeColumnsToContents();
    m_table->setAlternatingRowColors(true);

    auto* filter = new QLineEdit(this);
    filter->setObjectName(QStringLiteral("shortcutsFilter"));
    filter->setPlaceholderText(tr("Filter by action, key or menu"));
    filter->setClearButtonEnabled(true);
    connect(filter, &QLineEdit::textChanged, this, [this](const QString& text) {
        for (int r = 0; r < m_table->rowCount(); ++r) {
            bool match = text.isEmpty();
            for (int c = 0; c < 3 && !match; ++c)
                match = m_table->item(r, c)->text().contains(text, Qt::CaseInsensitive);
            m_table->setRowHidden(r, !match);
        }
    });
    auto* buttons = new QDialogButtonBox(QDialogButtonBox::Close, this);
    connect(buttons, &QDialogButtonBox::rejected, this, &QDialog::reject);
    auto* layout = new QVBoxLayout(this);
    layout->addWidget(filter);
    layout->addWidget(m_table);
    layout->addWidget(buttons);
    resize(640, 560);
}

} // namespace headroom
