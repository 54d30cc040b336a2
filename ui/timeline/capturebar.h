// SPDX-License-Identifier: MIT
#pragma once

#include "core/analysis/capturedoctor.h"

#include <QFrame>

#include <memory>
#include <vector>

class QLabel;
class QScrollArea;
class QToolButton;

namespace headroom {

class BackgroundJob;

/// The bar above the timeline that says what the open capture cannot show and how to
/// record one that can (the same findings as `headroom-cli doctor`). One line with the
/// first warning (it never makes the window taller than a line), a Details button for
/// every finding and its fix, and a close button.
/// The findings are computed off the GUI thread (they walk every allocation's stack);
/// only the latest file counts.
class CaptureBar : public QFrame {
    Q_OBJECT
public:
    explicit CaptureBar(QWidget* parent = nullptr);
    ~CaptureBar() override;

    /// Examines `trace` in the background; `findingsReady` follows (null: clears).
    void examine(std::shared_ptr<const LoadedTrace> trace);
    /// Shows `findings` (the window shows the bar when there are any).
    void setFindings(const std::vector<CaptureFinding>& findings);
    const std::vector<CaptureFinding>& findings() const { return m_findings; }
    bool detailsShown() const;

signals:
    /// The findings of the latest examine() are in (possibly none).
    void findingsReady(bool any);
    /// The close button: the bar is gone until the next file.
    void dismissed();

protected:
    void resizeEvent(QResizeEvent* event) override;

private:
    void showDetails(bool shown);
    void elideSummary();

    std::vector<CaptureFinding> m_findings;
    QLabel* m_title;
    QLabel* m_summary; ///< one line, elided to the bar's width (the tool tip has it all)
    QString m_summaryText;
    QLabel* m_details;
    QScrollArea* m_detailsArea;
    QToolButton* m_detailsButton;
    BackgroundJob* m_job; ///< the latest file's examination wins
};

} // namespace headroom
