// SPDX-License-Identifier: MIT
#pragma once

#include "core/io/loader.h"
#include "core/replay/allocatorreplay.h"

#include <QGroupBox>
#include <QString>

#include <memory>
#include <optional>
#include <vector>

class QCheckBox;
class QDoubleSpinBox;
class QLabel;
class QSpinBox;

namespace headroom {

class BackgroundJob;
class DeferredRebuild;

/// The what-if panel's Allocator section: the four PYTORCH_CUDA_ALLOC_CONF settings that move
/// memory, answered by replaying the recorded requests through the caching-allocator
/// simulation (headroom-cli replay) off the GUI thread. It starts at the setting the file
/// recorded; any other setting is replayed against the capacity and says whether the recorded
/// OOM would have happened.
class AllocatorSection : public QGroupBox {
    Q_OBJECT
public:
    explicit AllocatorSection(QWidget* parent = nullptr);
    ~AllocatorSection() override;

    /// The replay waits until `w` (the panel's scrolling column) is on screen, not the section
    /// itself, which a user may not have scrolled to.
    void deferUntilVisible(QWidget* w);

    /// A file and device to replay; null to clear. Resets the settings to the recorded ones.
    void setTrace(std::shared_ptr<const LoadedTrace> trace, int deviceIndex);
    /// The bytes the allocator may reserve (the panel's capacity); replays again.
    void setCapacity(int64_t bytes);

    /// The setting the widgets show (over the recorded one).
    AllocatorConfig config() const;
    bool isRecordedSetting() const { return config() == m_recorded; }
    /// Shows expandable_segments (the model's lever of the same name moved); replays again.
    void showExpandable(bool on);
    bool expandable() const;

    bool isReplaying() const;
    /// Starts a replay that waits to be on screen, in the background, now: an export of
    /// several views calls this first and replayNow() when it draws this one.
    void prepare();
    /// For an export or a screenshot: a replay that is pending is done now, on this thread;
    /// one already running is waited for (a picture must not say "replaying...").
    void replayNow();
    /// The last replay under the shown setting, and under the recorded one; null before the first.
    const AllocatorReplayResult* result() const { return m_result ? &*m_result : nullptr; }
    const AllocatorReplayResult* recordedResult() const { return m_recordedResult ? &*m_recordedResult : nullptr; }
    /// One line for the panel's summary beside the projected peak; empty without a replay.
    QString summaryHtml() const;

signals:
    /// The user toggled expandable_segments here (the model's lever follows).
    void expandableToggled(bool on);
    /// A replay finished: result() holds it.
    void replayed();
    /// The simulated reserved curve of a setting other than the recorded one, for the timeline.
    void curveReady(std::shared_ptr<const std::vector<int64_t>> curve, const QString& label);
    /// Back at the recorded setting (or no file): the timeline drops the curve.
    void curveCleared();

private:
    struct ReplayOutcome {
        std::optional<AllocatorReplayResult> recorded; ///< computed when not cached
        std::optional<AllocatorReplayResult> chosen;
        QString error;
    };
    /// Replays now when the section is on screen, else when it is next shown or painted.
    void replay();
    void startReplay();
    void adopt(ReplayOutcome out, bool recordedOnly);
    void showConfig(const AllocatorConfig& c);
    void showResult();

    std::shared_ptr<const LoadedTrace> m_trace;
    int m_deviceIndex = 0;
    int64_t m_capacity = 0;
    AllocatorConfig m_recorded;
    bool m_settingFromFile = false;
    std::optional<AllocatorReplayResult> m_result;
    std::optional<AllocatorReplayResult> m_recordedResult;
    BackgroundJob* m_job;
    DeferredRebuild* m_deferred;
    QCheckBox* m_expandable = nullptr;
    QSpinBox* m_maxSplit = nullptr;
    QDoubleSpinBox* m_gcThreshold = nullptr;
    QSpinBox* m_roundup = nullptr;
    QLabel* m_status = nullptr;
    bool m_updating = false;
    bool m_synchronous = false; ///< replayNow(): startReplay() runs on this thread
};

} // namespace headroom
