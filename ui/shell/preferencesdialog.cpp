// SPDX-License-Identifier: MIT
#include "ui/shell/preferencesdialog.h"

#include <QCheckBox>
#include <QComboBox>
#include <QDialogButtonBox>
#include <QFormLayout>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QVBoxLayout>

#include <algorithm>

#include <optional>

namespace headroom {

namespace {

/// Common accelerators' memory, offered in the capacity box (any size can be typed).
constexpr const char* kCapacityPresets[] = {"16 GiB", "24 GiB", "40 GiB", "48 GiB", "80 GiB", "94 GiB", "141 GiB", "192 GiB"};

/// Empty text: no default capacity (0). nullopt: not a size.
std::optional<int64_t> capacityOf(const QString& text)
{
    const QString t = text.trimmed();
    if (t.isEmpty() || t.compare(QLatin1String("none"), Qt::CaseInsensitive) == 0)
        return 0;
    const auto bytes = parseByteSize(t.toStdString());
    if (!bytes || *bytes <= 0 || *bytes > (int64_t(1) << 50))
        return std::nullopt;
    return *bytes;
}

QString capacityText(int64_t bytes)
{
    if (bytes <= 0)
        return {};
    const int64_t gib = int64_t(1) << 30;
    if (bytes % gib == 0)
        return QString::number(bytes / gib) + QStringLiteral(" GiB");
    return QString::number(bytes) + QStringLiteral(" B");
}

} // namespace

PreferencesDialog::PreferencesDialog(const Preferences& current, QWidget* parent)
    : QDialog(parent)
    , m_units(new QComboBox(this))
    , m_theme(new QComboBox(this))
    , m_capacity(new QComboBox(this))
    , m_capacityError(new QLabel(this))
    , m_autoReload(new QCheckBox(tr("Reload automatically when the open file changes on disk"), this))
    , m_buttons(new QDialogButtonBox(QDialogButtonBox::Ok | QDialogButtonBox::Cancel | QDialogButtonBox::RestoreDefaults, this))
{
    setWindowTitle(tr("Preferences"));
    setObjectName(QStringLiteral("preferencesDialog"));

    m_units->setObjectName(QStringLiteral("unitsCombo"));
    m_units->addItem(tr("Binary: KiB, MiB, GiB (1 GiB = 1024\u00B3 bytes, as PyTorch and nvidia-smi)"));
    m_units->addItem(tr("Decimal: kB, MB, GB (1 GB = 1000\u00B3 bytes)"));

    m_theme->setObjectName(QStringLiteral("themeCombo"));
    m_theme->addItem(tr("Follow the system"));
    m_theme->addItem(tr("Light"));
    m_theme->addItem(tr("Dark"));

    m_capacity->setObjectName(QStringLiteral("capacityCombo"));
    m_capacity->setEditable(true);
    m_capacity->setInsertPolicy(QComboBox::NoInsert);
    m_capacity->addItem(QString());
    for (const char* preset : kCapacityPresets)
        m_capacity->addItem(QString::fromLatin1(preset));
    m_capacity->lineEdit()->setPlaceholderText(tr("none: only what the file says (e.g. 80 GiB)"));
    m_capacity->setToolTip(tr("The memory of the device, used to draw the capacity line, judge how close the "
                              "peak came and size the what-if projections when the file does not say it "
                              "(a snapshot tells the capacity only when it holds an out-of-memory record)."));
    m_capacityError->setObjectName(QStringLiteral("capacityError"));
    m_capacityError->setStyleSheet(QStringLiteral("color: #c0392b"));
    m_capacityError->setVisible(false);

    m_autoReload->setObjectName(QStringLiteral("autoReloadCheck"));
    m_autoReload->setToolTip(tr("Without it, a bar above the views offers to reload when the file changes "
                                "(a training job that writes a new snapshot every few steps)."));

    auto* form = new QFormLayout;
    form->addRow(tr("&Sizes:"), m_units);
    form->addRow(tr("&Theme:"), m_theme);
    form->addRow(tr("Default &capacity:"), m_capacity);
    form->addRow(QString(), m_capacityError);
    form->addRow(tr("Files:"), m_autoReload);
    auto* layout = new QVBoxLayout(this);
    layout->addLayout(form);
    layout->addStretch();
    layout->addWidget(m_buttons);

    connect(m_buttons, &QDialogButtonBox::accepted, this, &QDialog::accept);
    connect(m_buttons, &QDialogButtonBox::rejected, this, &QDialog::reject);
    connect(m_buttons->button(QDialogButtonBox::RestoreDefaults), &QPushButton::clicked, this,
            [this] { show(Preferences{}); });
    connect(m_capacity, &QComboBox::currentTextChanged, this, &PreferencesDialog::validate);
    show(current);
}

void PreferencesDialog::show(const Preferences& p)
{
    m_units->setCurrentIndex(p.units == ByteUnits::Decimal ? 1 : 0);
    m_theme->setCurrentIndex(static_cast<int>(p.theme));
    m_capacity->setCurrentText(capacityText(p.defaultCapacity));
    m_autoReload->setChecked(p.autoReload);
    validate();
}

void PreferencesDialog::validate()
{
    const bool ok = capacityOf(m_capacity->currentText()).has_value();
    m_capacityError->setText(ok ? QString() : tr("Not a size: write it like \u201C80 GiB\u201D, \u201C24 GB\u201D or leave it empty."));
    m_capacityError->setVisible(!ok);
    m_buttons->button(QDialogButtonBox::Ok)->setEnabled(ok);
}

Preferences PreferencesDialog::preferences() const
{
    Preferences p;
    p.units = m_units->currentIndex() == 1 ? ByteUnits::Decimal : ByteUnits::Binary;
    p.theme = static_cast<Theme>(std::clamp(m_theme->currentIndex(), 0, 2));
    p.defaultCapacity = capacityOf(m_capacity->currentText()).value_or(0);
    p.autoReload = m_autoReload->isChecked();
    return p;
}

} // namespace headroom
