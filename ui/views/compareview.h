// SPDX-License-Identifier: MIT
#pragma once

#include "core/analysis/snapshotcompare.h"
#include "ui/explorer/explorerview.h"

#include <QWidget>

#include <memory>
#include <optional>

class QCustomPlot;
class QLabel;
class QPushButton;
class QTableWidget;

namespace headroom {

class BackgroundJob;
class DeferredRebuild;

/// Two snapshots side by side: the file on screen against another one the user picks
/// (before and after a fix, two ranks, two micro-batches). The allocated curves overlaid
/// on a shared axis (progress through each trace), the peaks and the category totals at
/// each peak with their differences, and the allocations live at one peak and not at the
/// other (by innermost frame and size). The other file loads and is analysed in the
/// background (latest pick wins; closing never waits for it); errors are shown in the view.
class CompareView : public QWidget, public ExplorerView {
    Q_OBJECT
public:
    explicit CompareView(Selection* selection, QWidget* parent = nullptr);

    QString viewId() const override { return QStringLiteral("compare"); }
    QString viewTitle() const override { return tr("Compare"); }
    QWidget* widget() override { return this; }
    void setData(const ExplorerDataPtr& data) override;
    void selectionChanged(const SelectionState&, Selection::Fields) override {}

    /// Loads `path` in the background and compares it with the file on screen; replaces
    /// a comparison still loading.
    void compareWith(const QString& path);
    bool isLoading() const;
    const std::optional<Comparison>& comparison() const { return m_comparison; }
    QTableWidget* summaryTable() const { return m_summary; }
    QTableWidget* differencesTable() const { return m_differences; }
    QString statusText() const;

signals:
    void comparisonReady();

private:
    struct Other {
        std::shared_ptr<const LoadedTrace> trace;
        size_t deviceIndex = 0;
        std::shared_ptr<const DeviceAnalysis> analysis;
        QString error;
    };
    void refresh();
    void plotCurves();

    QPushButton* m_pick;
    QLabel* m_status;
    QCustomPlot* m_plot;
    QTableWidget* m_summary;
    QTableWidget* m_differences;
    ExplorerDataPtr m_data;
    Other m_other;
    QString m_otherPath;
    BackgroundJob* m_job;
    std::optional<Comparison> m_comparison;
    DeferredRebuild* m_curves = nullptr;
};

} // namespace headroom
