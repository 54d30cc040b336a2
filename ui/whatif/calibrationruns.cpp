// SPDX-License-Identifier: MIT
#include "ui/whatif/calibrationruns.h"

#include "core/analysis/memoryanalysis.h"
#include "core/io/loader.h"
#include "ui/explorer/backgroundjob.h"

#include <QFileInfo>

#include <optional>

namespace headroom {

namespace {

struct Added {
    std::optional<CalibrationRun> run;
    QString error;
};

} // namespace

CalibrationRuns::CalibrationRuns(QObject* parent)
    : QObject(parent)
    , m_job(new BackgroundJob(this))
{
}

bool CalibrationRuns::isLoading() const
{
    return m_job->isRunning();
}

void CalibrationRuns::add(const QString& path, const StatedConfig& stated, const WhatIfConstants& k, size_t deviceIndex)
{
    const std::string file = path.toStdString();
    const QString name = QFileInfo(path).fileName();
    m_job->start(
        [file, stated, k, deviceIndex](BackgroundJob::Control& control) -> Added {
            Added a;
            try {
                LoadOptions options;
                options.cancel = control.cancelFlag();
                const auto trace = Loader::load(file, options);
                if (deviceIndex >= trace->snapshot.devices.size())
                    throw std::runtime_error(file + ": has " + std::to_string(trace->snapshot.devices.size()) +
                                             " device(s), not the device " + std::to_string(deviceIndex) +
                                             " the panel projects");
                StatedConfig st = readTraceConfig(*trace, deviceIndex);
                if (!st.microBatch || !st.seq)
                    throw std::runtime_error(file + ": the file does not tell its micro-batch and sequence length "
                                                    "(record it with python/headroom_record.py, or use headroom-cli "
                                                    "whatif FILE1 FILE2 --measured-micro-batch B1,B2)");
                st.precision = stated.precision;
                st.devices = stated.devices;
                // Calibrated on its own now, so a run that cannot be read is refused when added.
                WhatIfQuery q;
                q.measured = {trace, st, nullptr};
                q.device = deviceIndex;
                q.constants = k;
                const WhatIfSession session(q);
                // The calibration is all the refit reads: the trace is not kept.
                a.run = CalibrationRun{nullptr, st, std::make_shared<const Calibration>(*session.calibration())};
            } catch (const std::exception& e) {
                a.error = QString::fromStdString(e.what());
            }
            return a;
        },
        [this, name](const Added& a) {
            if (!a.run) {
                emit failed(a.error);
                return;
            }
            m_runs.push_back(*a.run);
            m_names << name;
            emit changed();
        });
}

void CalibrationRuns::clear()
{
    m_job->cancel();
    if (m_runs.empty())
        return;
    m_runs.clear();
    m_names.clear();
    emit changed();
}

} // namespace headroom
