// SPDX-License-Identifier: MIT
#include "ui/shell/startpage.h"

#include "ui/explorer/deferredrebuild.h"
#include "ui/plot/categorystyle.h"
#include "ui/shell/recentfiles.h"

#include <QApplication>
#include <QClipboard>
#include <QCoreApplication>
#include <QDir>
#include <QFileInfo>
#include <QFontDatabase>
#include <QGridLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QListWidget>
#include <QLocale>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QScrollArea>
#include <QVBoxLayout>

namespace headroom {

namespace {

constexpr int kPathRole = Qt::UserRole + 1;

/// What the bundled examples are (by file name); other files found there are listed
/// by name alone.
QString exampleDescription(const QString& fileName)
{
    if (fileName.startsWith(QLatin1String("pt27_kk_memory_ctx128_fullstep")))
        return QObject::tr("A full training step of a 3.4B-parameter model (PyTorch 2.7): forward, backward and the "
                           "AdamW step; 51 GiB peak when the optimizer state appears.");
    if (fileName.startsWith(QLatin1String("pt27_silmont_mem_snapshot")))
        return QObject::tr("A short PyTorch 2.7 run with allocator settings and annotations; a small file to try "
                           "every view.");
    return {};
}

QLabel* heading(const QString& text, QWidget* parent)
{
    auto* label = new QLabel(text, parent);
    QFont f = label->font();
    f.setBold(true);
    f.setPointSizeF(f.pointSizeF() * 1.15);
    label->setFont(f);
    return label;
}

} // namespace

QStringList StartPage::exampleFiles()
{
    QStringList dirs{QCoreApplication::applicationDirPath() + QStringLiteral("/../share/headroom/sample_traces")};
#ifdef HEADROOM_SOURCE_SAMPLES
    dirs << QStringLiteral(HEADROOM_SOURCE_SAMPLES);
#endif
    for (const QString& dir : std::as_const(dirs)) {
        const QFileInfoList files = QDir(dir).entryInfoList(QDir::Files | QDir::Readable, QDir::Name);
        if (files.isEmpty())
            continue;
        QStringList out;
        for (const QFileInfo& f : files)
            out << f.canonicalFilePath();
        return out;
    }
    return {};
}

QString StartPage::recordingSnippet()
{
    return QStringLiteral(
        "import torch\n"
        "\n"
        "# Before the model touches the GPU: allocations made earlier have no stack.\n"
        "torch.cuda.memory._record_memory_history(max_entries=1_000_000)\n"
        "try:\n"
        "    train()  # a few steps, or until it runs out of memory\n"
        "except torch.cuda.OutOfMemoryError:\n"
        "    torch.cuda.memory._dump_snapshot(\"oom_snapshot.pickle\")\n"
        "    raise\n"
        "torch.cuda.memory._dump_snapshot(\"snapshot.pickle\")\n"
        "torch.cuda.memory._record_memory_history(enabled=None)\n");
}

StartPage::StartPage(RecentFiles* recent, QWidget* parent)
    : QWidget(parent)
    , m_recentFiles(recent)
    , m_recent(new QListWidget(this))
    , m_examples(new QListWidget(this))
{
    setObjectName(QStringLiteral("startPage"));

    auto* title = new QLabel(tr("Headroom"), this);
    QFont tf = title->font();
    tf.setPointSizeF(tf.pointSizeF() * 2.0);
    tf.setBold(true);
    title->setFont(tf);
    auto* tagline = new QLabel(tr("Where did the GPU memory go? Open a PyTorch memory snapshot, a profiler memory "
                                  "timeline or a Chrome trace to see memory over time by category and phase, the "
                                  "peak and what was alive at it, and what would make the job fit."),
                               this);
    tagline->setWordWrap(true);

    auto* open = new QPushButton(tr("Open a File\u2026"), this);
    open->setObjectName(QStringLiteral("startOpenButton"));
    open->setToolTip(tr("Ctrl+O; or drop a file on the window"));
    open->setDefault(true);
    connect(open, &QPushButton::clicked, this, &StartPage::openRequested);

    m_recent->setObjectName(QStringLiteral("startRecentList"));
    m_recent->setWordWrap(true);
    m_recent->setAlternatingRowColors(true);
    m_examples->setObjectName(QStringLiteral("startExampleList"));
    m_examples->setWordWrap(true);
    m_examples->setAlternatingRowColors(true);
    for (const QString& path : exampleFiles()) {
        const QString name = QFileInfo(path).fileName();
        const QString about = exampleDescription(name);
        auto* item = new QListWidgetItem(about.isEmpty() ? name : name + QLatin1Char('\n') + about, m_examples);
        item->setData(kPathRole, path);
        item->setToolTip(QDir::toNativeSeparators(path));
    }
    if (m_examples->count() == 0) {
        auto* item = new QListWidgetItem(tr("No examples found (they are installed in share/headroom/sample_traces)."), m_examples);
        item->setFlags(Qt::NoItemFlags);
    }
    for (QListWidget* list : {m_recent, m_examples}) {
        connect(list, &QListWidget::itemActivated, this, &StartPage::activate);
        connect(list, &QListWidget::itemClicked, this, &StartPage::activate);
    }

    auto* snippet = new QPlainTextEdit(recordingSnippet(), this);
    snippet->setObjectName(QStringLiteral("startSnippet"));
    snippet->setReadOnly(true);
    snippet->setFont(QFontDatabase::systemFont(QFontDatabase::FixedFont));
    snippet->setLineWrapMode(QPlainTextEdit::NoWrap);
    snippet->setMinimumHeight(QFontMetrics(snippet->font()).lineSpacing() * 13);
    auto* copy = new QPushButton(tr("Copy Snippet"), this);
    copy->setObjectName(QStringLiteral("startCopySnippet"));
    connect(copy, &QPushButton::clicked, this, [copy] {
        QApplication::clipboard()->setText(recordingSnippet());
        copy->setText(tr("Copied"));
    });
    auto* recordHelp = new QLabel(
        tr("Run it in the training script (PyTorch 2.1 or later) and open the <tt>.pickle</tt> here. "
           "<tt>python/headroom_record.py</tt> in the source tree does the same and also marks iterations and "
           "phases, dumps on out-of-memory and per rank. The profiler's <tt>export_memory_timeline</tt> files "
           "and Chrome traces with memory events open too."),
        this);
    recordHelp->setWordWrap(true);
    recordHelp->setTextFormat(Qt::RichText);

    auto* left = new QVBoxLayout;
    auto* openRow = new QHBoxLayout;
    openRow->addWidget(open);
    openRow->addStretch();
    left->addLayout(openRow);
    left->addSpacing(8);
    left->addWidget(heading(tr("Recent files"), this));
    left->addWidget(m_recent, 3);
    left->addWidget(heading(tr("Open an example"), this));
    left->addWidget(m_examples, 2);

    auto* right = new QVBoxLayout;
    right->addWidget(heading(tr("Record a snapshot"), this));
    right->addWidget(snippet);
    auto* copyRow = new QHBoxLayout;
    copyRow->addStretch();
    copyRow->addWidget(copy);
    right->addLayout(copyRow);
    right->addWidget(recordHelp);
    right->addStretch();

    auto* columns = new QHBoxLayout;
    columns->addLayout(left, 1);
    columns->addSpacing(24);
    columns->addLayout(right, 1);

    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(32, 24, 32, 24);
    layout->addWidget(title);
    layout->addWidget(tagline);
    layout->addSpacing(12);
    layout->addLayout(columns, 1);

    m_refresh = new DeferredRebuild(this, [this] { refreshRecent(); });
    connect(m_recentFiles, &RecentFiles::changed, m_refresh, &DeferredRebuild::request);
    refreshRecent();
}

QListWidget* StartPage::recentList()
{
    m_refresh->ensure();
    return m_recent;
}

void StartPage::refreshRecent()
{
    m_recent->clear();
    const QLocale locale;
    for (const QString& path : m_recentFiles->files()) {
        const QFileInfo fi(path);
        const RecentFileInfo info = m_recentFiles->info(path);
        QStringList details;
        if (!fi.exists())
            details << tr("missing");
        if (info.peakBytes >= 0)
            details << tr("peak %1").arg(formatBytesQ(info.peakBytes));
        if (info.opened.isValid())
            details << tr("opened %1").arg(locale.toString(info.opened, QLocale::ShortFormat));
        details << QDir::toNativeSeparators(fi.absolutePath());
        auto* item = new QListWidgetItem(fi.fileName() + QLatin1Char('\n') + details.join(QStringLiteral("  \u00B7  ")), m_recent);
        item->setData(kPathRole, path);
        item->setToolTip(QDir::toNativeSeparators(path));
        if (!fi.exists())
            item->setForeground(palette().color(QPalette::Disabled, QPalette::Text));
    }
    if (m_recent->count() == 0) {
        auto* item = new QListWidgetItem(tr("Files you open appear here, with their peak."), m_recent);
        item->setFlags(Qt::NoItemFlags);
    }
}

void StartPage::activate(QListWidgetItem* item)
{
    const QString path = item ? item->data(kPathRole).toString() : QString();
    if (path.isEmpty())
        return;
    // A click opens; Return and a double click activate too: one request per gesture.
    if (path == m_lastRequest && m_lastRequestTime.isValid() && m_lastRequestTime.elapsed() < 1000)
        return;
    m_lastRequest = path;
    m_lastRequestTime.start();
    emit fileRequested(path);
}

} // namespace headroom
