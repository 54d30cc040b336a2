// SPDX-License-Identifier: MIT
#include "ui/whatif/whatifconstantsdialog.h"

#include <QDialogButtonBox>
#include <QHeaderView>
#include <QLabel>
#include <QMessageBox>
#include <QPushButton>
#include <QTableWidget>
#include <QVBoxLayout>

#include <cmath>

namespace headroom {

namespace {
enum Column { LabelColumn, ValueColumn, UnitColumn, GuessColumn, SourceColumn, ColumnCount };
}

WhatIfConstantsDialog::WhatIfConstantsDialog(const WhatIfConstants& constants, QWidget* parent)
    : QDialog(parent)
    , m_constants(constants)
    , m_table(new QTableWidget(int(WhatIfConstants::entries().size()), ColumnCount, this))
{
    setWindowTitle(tr("What-if constants"));
    auto* intro = new QLabel(tr("The model's constants. Values marked <i>guess</i> are built-in defaults, not "
                                "measurements: replace them with what you know about your cluster."),
                             this);
    intro->setWordWrap(true);
    m_table->setHorizontalHeaderLabels({tr("Constant"), tr("Value"), tr("Unit"), tr("Guess"), tr("Source")});
    m_table->verticalHeader()->hide();
    m_table->horizontalHeader()->setStretchLastSection(true);
    fill(constants);
    m_table->resizeColumnsToContents();

    auto* buttons = new QDialogButtonBox(QDialogButtonBox::Ok | QDialogButtonBox::Cancel | QDialogButtonBox::RestoreDefaults, this);
    connect(buttons->button(QDialogButtonBox::RestoreDefaults), &QPushButton::clicked, this, [this] { fill(WhatIfConstants{}); });
    connect(buttons, &QDialogButtonBox::rejected, this, &QDialog::reject);
    connect(buttons, &QDialogButtonBox::accepted, this, [this] {
        QString error;
        if (readTable(&error))
            accept();
        else
            QMessageBox::warning(this, windowTitle(), error);
    });
    auto* layout = new QVBoxLayout(this);
    layout->addWidget(intro);
    layout->addWidget(m_table, 1);
    layout->addWidget(buttons);
    resize(760, 520);
}

void WhatIfConstantsDialog::fill(const WhatIfConstants& k)
{
    const auto& entries = WhatIfConstants::entries();
    for (int row = 0; row < int(entries.size()); ++row) {
        const auto& e = entries[size_t(row)];
        auto fixed = [](const QString& text) {
            auto* item = new QTableWidgetItem(text);
            item->setFlags(item->flags() & ~Qt::ItemIsEditable);
            return item;
        };
        m_table->setItem(row, LabelColumn, fixed(QString::fromUtf8(e.label)));
        m_table->item(row, LabelColumn)->setToolTip(QString::fromUtf8(e.key));
        m_table->setItem(row, ValueColumn, new QTableWidgetItem(QString::number(k.*(e.member), 'g', 10)));
        m_table->setItem(row, UnitColumn, fixed(QString::fromUtf8(e.unit)));
        m_table->setItem(row, GuessColumn, fixed(e.guess ? tr("guess") : QString()));
        m_table->setItem(row, SourceColumn, fixed(QString::fromUtf8(e.source)));
    }
}

bool WhatIfConstantsDialog::readTable(QString* error)
{
    WhatIfConstants k = m_constants;
    const auto& entries = WhatIfConstants::entries();
    for (int row = 0; row < int(entries.size()); ++row) {
        bool ok = false;
        const double v = m_table->item(row, ValueColumn)->text().trimmed().toDouble(&ok);
        if (!ok || !std::isfinite(v) || v < 0) {
            *error = tr("%1: \"%2\" is not a non-negative number.")
                         .arg(QString::fromUtf8(entries[size_t(row)].label), m_table->item(row, ValueColumn)->text());
            return false;
        }
        k.*(entries[size_t(row)].member) = v;
    }
    m_constants = k;
    return true;
}

} // namespace headroom
