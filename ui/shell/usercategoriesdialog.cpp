// SPDX-License-Identifier: MIT
#include "ui/shell/usercategoriesdialog.h"

#include "core/analysis/livegroups.h"
#include "ui/plot/categorystyle.h"

#include <QCheckBox>
#include <QDialogButtonBox>
#include <QFile>
#include <QFileDialog>
#include <QFontDatabase>
#include <QHeaderView>
#include <QLabel>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QTableWidget>
#include <QVBoxLayout>

namespace headroom {

namespace {

const char* const kExample = R"({"categories": [
  {"name": "optimizer step", "function": "^(step|_multi_tensor_adamw|_fused_adamw)$", "color": "#8e44ad"},
  {"name": "attention", "function": "attention|attn", "file": "\\.py$", "color": "#e67e22"},
  {"name": "tagged by user_metadata", "metadata": "^kv_cache"}
]}
)";

} // namespace

UserCategoriesDialog::UserCategoriesDialog(const QString& rulesText, ExplorerDataPtr data, QWidget* parent,
                                           bool fileOnly)
    : QDialog(parent)
    , m_data(std::move(data))
    , m_text(new QPlainTextEdit(this))
    , m_status(new QLabel(this))
    , m_table(new QTableWidget(0, 3, this))
{
    setWindowTitle(tr("Your Categories"));
    auto* layout = new QVBoxLayout(this);
    auto* intro = new QLabel(tr("Rules over each allocation's frames (<i>function</i> and <i>file</i> on one frame) "
                                "and its <i>user_metadata</i>; the first rule that matches wins. "
                                "The Breakdown shows what each claims; the same file works with "
                                "<tt>headroom-cli analyze --categories</tt>."),
                             this);
    intro->setWordWrap(true);
    layout->addWidget(intro);
    m_text->setObjectName(QStringLiteral("categoriesText"));
    m_text->setFont(QFontDatabase::systemFont(QFontDatabase::FixedFont));
    m_text->setPlainText(rulesText.isEmpty() ? QString::fromUtf8(kExample) : rulesText);
    layout->addWidget(m_text, 2);
    m_status->setObjectName(QStringLiteral("categoriesStatus"));
    m_status->setWordWrap(true);
    m_status->setTextInteractionFlags(Qt::TextSelectableByMouse);
    layout->addWidget(m_status);
    m_table->setObjectName(QStringLiteral("categoriesTest"));
    m_table->setHorizontalHeaderLabels({tr("Rule"), tr("At the peak"), tr("Allocations")});
    m_table->horizontalHeader()->setSectionResizeMode(0, QHeaderView::Stretch);
    m_table->verticalHeader()->hide();
    m_table->setEditTriggers(QAbstractItemView::NoEditTriggers);
    layout->addWidget(m_table, 1);
    m_fileOnly = new QCheckBox(tr("Only for this file (the default rules stay for every other file)"), this);
    m_fileOnly->setObjectName(QStringLiteral("categoriesFileOnly"));
    m_fileOnly->setChecked(fileOnly && m_data);
    m_fileOnly->setEnabled(m_data != nullptr);
    layout->addWidget(m_fileOnly);

    auto* buttons = new QDialogButtonBox(QDialogButtonBox::Ok | QDialogButtonBox::Cancel, this);
    QPushButton* testButton = buttons->addButton(tr("&Test on the Open File"), QDialogButtonBox::ActionRole);
    testButton->setObjectName(QStringLiteral("categoriesTestButton"));
    testButton->setEnabled(m_data != nullptr);
    QPushButton* openButton = buttons->addButton(tr("&Open\u2026"), QDialogButtonBox::ActionRole);
    QPushButton* saveButton = buttons->addButton(tr("&Save As\u2026"), QDialogButtonBox::ActionRole);
    QPushButton* clearButton = buttons->addButton(tr("&No Categories"), QDialogButtonBox::ResetRole);
    connect(testButton, &QPushButton::clicked, this, [this] { test(); });
    connect(openButton, &QPushButton::clicked, this, [this] {
        const QString path = QFileDialog::getOpenFileName(this, tr("Open Category Rules"), QString(),
                                                          tr("Category rules (*.json);;All files (*)"));
        if (!path.isEmpty())
            openFile(path);
    });
    connect(saveButton, &QPushButton::clicked, this, [this] {
        const QString path = QFileDialog::getSaveFileName(this, tr("Save Category Rules"), QStringLiteral("categories.json"),
                                                          tr("Category rules (*.json)"));
        if (!path.isEmpty())
            saveFile(path);
    });
    connect(clearButton, &QPushButton::clicked, this, [this] { m_text->clear(); });
    connect(buttons, &QDialogButtonBox::accepted, this, &UserCategoriesDialog::accept);
    connect(buttons, &QDialogButtonBox::rejected, this, &QDialog::reject);
    layout->addWidget(buttons);
    resize(720, 520);
    if (m_data)
        test();
}

QString UserCategoriesDialog::rulesText() const { return m_text->toPlainText().trimmed(); }

bool UserCategoriesDialog::test()
{
    m_table->setRowCount(0);
    m_rules.reset();
    const QString text = rulesText();
    if (text.isEmpty()) {
        m_status->setText(tr("No categories: the Breakdown shows the built-in ones only."));
        return true;
    }
    try {
        auto rules = std::make_shared<UserCategories>(UserCategories::parse(text.toStdString(), "the rules"));
        m_status->setText(tr("%n rule(s), valid.", nullptr, int(rules->rules().size())));
        if (m_data)
            showGroups(*rules);
        m_rules = std::move(rules);
        return true;
    } catch (const UserCategoriesError& e) {
        m_status->setText(QStringLiteral("<b style='color:#c62828'>%1</b>").arg(QString::fromStdString(e.what()).toHtmlEscaped()));
        return false;
    }
}

void UserCategoriesDialog::showGroups(const UserCategories& rules)
{
    const MemoryTimeline& tl = m_data->timeline();
    const UserCategoryTotals g = userCategoriesAt(*m_data->trace, m_data->deviceIndex, m_data->analysis, tl.peakEventIndex, rules);
    auto row = [&](const QString& name, int64_t bytes, int64_t count, const QString& color) {
        const int r = m_table->rowCount();
        m_table->insertRow(r);
        auto* item = new QTableWidgetItem(name);
        if (!color.isEmpty())
            item->setForeground(QColor(color));
        m_table->setItem(r, 0, item);
        m_table->setItem(r, 1, new QTableWidgetItem(formatBytesQ(bytes)));
        m_table->setItem(r, 2, new QTableWidgetItem(QString::number(count)));
    };
    for (const UserCategoryGroup& u : g.groups)
        row(QString::fromStdString(u.name), u.bytes, u.count, QString::fromStdString(u.color));
    row(tr("(no rule)"), g.unclaimedBytes, g.unclaimedCount, QString());
    m_status->setText(m_status->text() + QLatin1Char(' ') +
                      tr("At the peak of the open file (event %1), %2 alive:").arg(tl.peakEventIndex).arg(formatBytesQ(g.bytes)));
}

bool UserCategoriesDialog::openFile(const QString& path)
{
    QFile f(path);
    if (!f.open(QIODevice::ReadOnly)) {
        m_status->setText(tr("<b>Cannot read %1</b>").arg(path.toHtmlEscaped()));
        return false;
    }
    m_text->setPlainText(QString::fromUtf8(f.readAll()));
    return test();
}

bool UserCategoriesDialog::saveFile(const QString& path)
{
    QFile f(path);
    if (!f.open(QIODevice::WriteOnly | QIODevice::Truncate) || f.write(rulesText().toUtf8() + '\n') < 0) {
        m_status->setText(tr("<b>Cannot write %1</b>").arg(path.toHtmlEscaped()));
        return false;
    }
    m_status->setText(tr("Saved to %1.").arg(path.toHtmlEscaped()));
    return true;
}

bool UserCategoriesDialog::forThisFileOnly() const
{
    return m_fileOnly->isEnabled() && m_fileOnly->isChecked();
}

void UserCategoriesDialog::accept()
{
    if (test()) // an invalid file stays open, its error shown
        QDialog::accept();
}

} // namespace headroom
