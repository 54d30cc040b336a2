// SPDX-License-Identifier: MIT
#include "ui/whatif/allocatorsection.h"

#include "ui/explorer/backgroundjob.h"
#include "ui/explorer/deferredrebuild.h"
#include "ui/plot/categorystyle.h"

#include "core/util/units.h"

#include <QCheckBox>
#include <QDoubleSpinBox>
#include <QFormLayout>
#include <QLabel>
#include <QSpinBox>

#include <algorithm>

namespace headroom {

namespace {

constexpr int64_t kMiB = int64_t(1) << 20;

QString settingName(const AllocatorConfig& c)
{
    const std::string t = c.text();
    return t.empty() ? QObject::tr("the defaults") : QString::fromStdString(t);
}

QString bytes(int64_t b) { return formatBytesQ(b, 2); }

bool uniform(const std::array<int, AllocatorConfig::kRoundupIntervals>& d)
{
    return std::all_of(d.begin(), d.end(), [&](int x) { return x == d[0]; });
}

} // namespace

AllocatorSection::AllocatorSection(QWidget* parent)
    : QGroupBox(tr("Allocator (PYTORCH_CUDA_ALLOC_CONF)"), parent)
    , m_job(new BackgroundJob(this))
    , m_deferred(new DeferredRebuild(this, [this] { startReplay(); }))
{
    setObjectName(QStringLiteral("allocatorSection"));
    setToolTip(tr("Replays the recorded allocation requests through a simulation of PyTorch's caching allocator "
                  "under these settings (headroom-cli replay --alloc-conf)"));
    auto* form = new QFormLayout(this);
    form->setFieldGrowthPolicy(QFormLayout::AllNonFixedFieldsGrow);
    m_expandable = new QCheckBox(tr("expandable_segments"), this);
    m_expandable->setObjectName(QStringLiteral("allocExpandable"));
    form->addRow(m_expandable);
    m_maxSplit = new QSpinBox(this);
    m_maxSplit->setObjectName(QStringLiteral("allocMaxSplit"));
    m_maxSplit->setRange(0, 1 << 20);
    m_maxSplit->setSuffix(tr(" MiB"));
    m_maxSplit->setSpecialValueText(tr("unlimited"));
    m_maxSplit->setToolTip(tr("max_split_size_mb: cached blocks this large are never split"));
    form->addRow(tr("max split"), m_maxSplit);
    m_gcThreshold = new QDoubleSpinBox(this);
    m_gcThreshold->setObjectName(QStringLiteral("allocGcThreshold"));
    m_gcThreshold->setRange(0, 0.99);
    m_gcThreshold->setDecimals(2);
    m_gcThreshold->setSingleStep(0.05);
    m_gcThreshold->setSpecialValueText(tr("off"));
    m_gcThreshold->setToolTip(tr("garbage_collection_threshold: above this share of the capacity, cached blocks "
                                 "are released before a new segment is reserved"));
    form->addRow(tr("GC threshold"), m_gcThreshold);
    m_roundup = new QSpinBox(this);
    m_roundup->setObjectName(QStringLiteral("allocRoundup"));
    m_roundup->setRange(0, 16);
    m_roundup->setSpecialValueText(tr("off"));
    m_roundup->setToolTip(tr("roundup_power2_divisions: request sizes round up to this many steps per power of two"));
    form->addRow(tr("round-up divisions"), m_roundup);
    m_status = new QLabel(this);
    m_status->setObjectName(QStringLiteral("allocStatus"));
    m_status->setTextFormat(Qt::RichText);
    m_status->setTextInteractionFlags(Qt::TextSelectableByMouse);
    form->addRow(m_status);

    auto changed = [this] {
        if (!m_updating)
            replay();
    };
    connect(m_expandable, &QCheckBox::toggled, this, [this](bool on) {
        if (m_updating)
            return;
        emit expandableToggled(on);
        replay();
    });
    connect(m_maxSplit, qOverload<int>(&QSpinBox::valueChanged), this, changed);
    connect(m_gcThreshold, qOverload<double>(&QDoubleSpinBox::valueChanged), this, changed);
    connect(m_roundup, qOverload<int>(&QSpinBox::valueChanged), this, changed);
    setTrace(nullptr, 0);
}

AllocatorSection::~AllocatorSection() = default;

void AllocatorSection::setTrace(std::shared_ptr<const LoadedTrace> trace, int deviceIndex)
{
    m_job->cancel();
    m_result.reset();
    m_recordedResult.reset();
    m_trace = std::move(trace);
    m_deviceIndex = deviceIndex;
    const bool usable = m_trace && deviceIndex >= 0 && size_t(deviceIndex) < m_trace->snapshot.devices.size() &&
                        m_trace->snapshot.devices[size_t(deviceIndex)].trace.count() > 0;
    m_recorded = m_trace ? AllocatorConfig::fromSnapshot(m_trace->snapshot.allocatorSettings, &m_settingFromFile)
                         : AllocatorConfig{};
    showConfig(m_recorded);
    for (QWidget* w : std::initializer_list<QWidget*>{m_expandable, m_maxSplit, m_gcThreshold, m_roundup})
        w->setEnabled(usable);
    emit curveCleared();
    if (!usable) {
        m_status->setText(m_trace ? tr("The file has no allocation history to replay.") : QString());
        return;
    }
    m_status->clear();
    replay();
}

void AllocatorSection::setCapacity(int64_t bytes)
{
    if (bytes == m_capacity)
        return;
    m_capacity = bytes;
    if (m_trace)
        replay();
}

void AllocatorSection::showConfig(const AllocatorConfig& c)
{
    m_updating = true;
    m_expandable->setChecked(c.expandableSegments);
    m_maxSplit->setValue(c.maxSplitSize == AllocatorConfig::kUnlimited ? 0 : int(c.maxSplitSize / kMiB));
    m_gcThreshold->setValue(c.garbageCollectionThreshold);
    m_roundup->setValue(c.roundupDivisions[0]);
    m_updating = false;
}

AllocatorConfig AllocatorSection::config() const
{
    AllocatorConfig c = m_recorded;
    c.expandableSegments = m_expandable->isChecked();
    c.maxSplitSize = m_maxSplit->value() > 0 ? int64_t(m_maxSplit->value()) * kMiB : AllocatorConfig::kUnlimited;
    c.garbageCollectionThreshold = m_gcThreshold->value();
    // A per-interval list the file recorded stays as it is until the spin box moves.
    if (uniform(m_recorded.roundupDivisions) || m_roundup->value() != m_recorded.roundupDivisions[0])
        c.roundupDivisions.fill(m_roundup->value());
    return c;
}

void AllocatorSection::showExpandable(bool on)
{
    if (m_expandable->isChecked() == on)
        return;
    m_updating = true;
    m_expandable->setChecked(on);
    m_updating = false;
    if (m_trace)
        replay();
}

void AllocatorSection::deferUntilVisible(QWidget* w) { m_deferred->judgeVisibilityBy(w); }

bool AllocatorSection::expandable() const { return m_expandable->isChecked(); }

bool AllocatorSection::isReplaying() const { return m_job->isRunning(); }

void AllocatorSection::replay()
{
    if (!m_trace || !m_expandable->isEnabled())
        return;
    // A panel nobody sees (another dock tab, a screenshot of the timeline) does not take a
    // core from the analysis: the replay waits until the section is on screen.
    m_job->cancel();
    m_deferred->request();
}

void AllocatorSection::startReplay()
{
    if (!m_trace || !m_expandable->isEnabled())
        return;
    const AllocatorConfig chosen = config();
    const bool needRecorded = !m_recordedResult;
    const bool recordedOnly = chosen == m_recorded;
    auto work = [trace = m_trace, device = size_t(m_deviceIndex), chosen, capacity = m_capacity, needRecorded,
                 recordedOnly](const std::atomic<bool>* cancel) {
        ReplayOutcome out;
        try {
            const DeviceData& dev = trace->snapshot.devices[device];
            const MemoryTimeline& tl = trace->timelines[device];
            if (needRecorded)
                out.recorded = replayAllocator(trace->snapshot, dev, tl);
            if (!recordedOnly && !(cancel && cancel->load())) {
                AllocatorReplayOptions o;
                o.config = chosen;
                o.capacity = capacity;
                o.keepCurve = true;
                out.chosen = replayAllocator(trace->snapshot, dev, tl, o);
            }
        } catch (const std::exception& e) {
            out.error = QString::fromUtf8(e.what());
        }
        return out;
    };
    if (m_synchronous) {
        adopt(work(nullptr), recordedOnly);
        return;
    }
    m_status->setText(tr("replaying\u2026"));
    m_job->start([work](BackgroundJob::Control& control) { return work(control.cancelFlag()); },
                 [this, recordedOnly](ReplayOutcome out) { adopt(std::move(out), recordedOnly); });
}

void AllocatorSection::prepare()
{
    if (m_trace && m_expandable->isEnabled())
        m_deferred->ensure();
}

void AllocatorSection::replayNow()
{
    if (!m_trace || !m_expandable->isEnabled())
        return;
    if (m_result && !m_job->isRunning() && !m_deferred->stale())
        return;
    // The latest request is under way (prepare(), or the section was on screen): its answer.
    if (!m_deferred->stale() && m_job->finishNow())
        return;
    m_job->cancel();
    m_synchronous = true;
    if (m_deferred->stale())
        m_deferred->ensure();
    else
        startReplay();
    m_synchronous = false;
}

void AllocatorSection::adopt(ReplayOutcome out, bool recordedOnly)
{
    if (!out.error.isEmpty()) {
        m_result.reset();
        m_status->setText(tr("<b>The replay failed</b>: %1").arg(out.error.toHtmlEscaped()));
        emit replayed();
        return;
    }
    if (out.recorded)
        m_recordedResult = std::move(out.recorded);
    m_result = recordedOnly ? m_recordedResult : std::move(out.chosen);
    showResult();
    if (recordedOnly || !m_result) {
        emit curveCleared();
    } else {
        auto curve = std::make_shared<const std::vector<int64_t>>(std::move(m_result->simulatedReserved));
        m_result->simulatedReserved.clear();
        emit curveReady(curve, tr("reserved, simulated (%1)").arg(settingName(m_result->config)));
    }
    emit replayed();
}

void AllocatorSection::showResult()
{
    // Short lines without wrapping: a wrapped label in the scrolling levers column is not given
    // the height it needs. The sentence is the panel's summary and this label's tool tip.
    m_status->setToolTip(summaryHtml());
    if (!m_result || !m_recordedResult) {
        m_status->clear();
        return;
    }
    const AllocatorReplayResult& rec = *m_recordedResult;
    const AllocatorReplayResult& r = *m_result;
    QStringList lines;
    const bool checked = rec.checkedAgainstRecording();
    if (!checked)
        lines << tr("no segment events to check against");
    else if (rec.segmentMatchShare() < 0.99 || rec.reservedDifferenceShare() > 0.01)
        lines << tr("<b>reproduces %1% of the recording</b>").arg(int(rec.segmentMatchShare() * 100));
    if (r.config == rec.config) {
        if (checked)
            lines << tr("as recorded: %1/%2 segment events").arg(rec.segmentEventsMatched).arg(rec.segmentEventsRecorded);
        lines << tr("reserved peak %1").arg(bytes(rec.reservedPeak));
        m_status->setText(lines.join(QStringLiteral("<br>")));
        return;
    }
    lines << tr("reserved peak <b>%1</b>").arg(bytes(r.reservedPeak)) << tr("(recorded %1)").arg(bytes(rec.recordedReservedPeak));
    const QString cap = r.capacity > 0 ? bytes(r.capacity) : tr("no limit");
    if (r.oomAvoided)
        lines << (*r.oomAvoided ? tr("<b style='color:#2e7d32'>OOM avoided</b> on %1") : tr("<b style='color:#c62828'>OOM still happens</b> on %1"))
                     .arg(cap);
    else if (r.firstSimulatedOom)
        lines << tr("<b style='color:#c62828'>OOM at event %1</b> on %2").arg(r.firstSimulatedOom->event).arg(cap);
    else
        lines << tr("no OOM on %1").arg(cap);
    m_status->setText(lines.join(QStringLiteral("<br>")));
}

QString AllocatorSection::summaryHtml() const
{
    if (!m_result || !m_recordedResult)
        return {};
    const AllocatorReplayResult& rec = *m_recordedResult;
    const AllocatorReplayResult& r = *m_result;
    QStringList lines;
    if (!rec.checkedAgainstRecording())
        lines << tr("The file records no segment events: the replay starts from an empty cache and cannot be "
                    "checked against the recording.");
    else if (rec.segmentMatchShare() < 0.99 || rec.reservedDifferenceShare() > 0.01)
        lines << tr("The replay reproduces %1 of %2 recorded segment events (reserved off by up to %3)%4: "
                    "read its answers for other settings as indicative.")
                     .arg(rec.segmentEventsMatched)
                     .arg(rec.segmentEventsRecorded)
                     .arg(bytes(rec.maxReservedDifference))
                     .arg(rec.firstDivergence ? tr("; first divergence at event %1: %2")
                                                    .arg(rec.firstDivergence->event)
                                                    .arg(QString::fromStdString(rec.firstDivergence->why).toHtmlEscaped())
                                              : QString());
    if (&r == &rec || r.config == rec.config) {
        lines << tr("<b>Recorded setting</b> (%1%2): the replay reproduces %3 of %4 segment events; reserved peak %5.")
                     .arg(settingName(rec.config).toHtmlEscaped(), m_settingFromFile ? QString() : tr(", the file does not record it"))
                     .arg(rec.segmentEventsMatched)
                     .arg(rec.segmentEventsRecorded)
                     .arg(bytes(rec.reservedPeak));
        return lines.join(QStringLiteral("<br>"));
    }
    QString s = tr("<b>Under %1</b>: reserved peak %2 (recorded %3)")
                    .arg(settingName(r.config).toHtmlEscaped(), bytes(r.reservedPeak), bytes(rec.recordedReservedPeak));
    const QString cap = r.capacity > 0 ? bytes(r.capacity) : tr("an unlimited device");
    if (r.oomAvoided) {
        if (*r.oomAvoided)
            s += tr("; the recorded OOM is <b style='color:#2e7d32'>avoided</b> on %1").arg(cap);
        else if (r.atRecordedOom)
            s += tr("; the OOM <b style='color:#c62828'>still happens</b> on %1 (request %2, largest free block %3)")
                     .arg(cap, bytes(r.atRecordedOom->size), bytes(r.atRecordedOom->largestFree));
        else
            s += tr("; the OOM <b style='color:#c62828'>still happens</b> on %1").arg(cap);
    } else if (r.firstSimulatedOom) {
        s += tr("; it runs out of memory on %1 at event %2 (request %3)")
                 .arg(cap)
                 .arg(r.firstSimulatedOom->event)
                 .arg(bytes(r.firstSimulatedOom->size));
    } else {
        s += tr("; no OOM on %1").arg(cap);
    }
    lines << s + QLatin1Char('.');
    return lines.join(QStringLiteral("<br>"));
}

} // namespace headroom
