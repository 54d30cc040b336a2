// SPDX-License-Identifier: MIT
#include "ui/explorer/explorerdata.h"

#include "core/report/devicereport.h"
#include "core/util/loaderror.h"

#include <future>

namespace headroom {

std::shared_ptr<const ExplorerData> ExplorerData::compute(std::shared_ptr<const LoadedTrace> trace,
                                                          size_t deviceIndex, const CapacityChoice& capacity,
                                                          const std::atomic<bool>* cancel)
{
    auto data = std::make_shared<ExplorerData>();
    data->trace = std::move(trace);
    data->deviceIndex = deviceIndex;
    // The bands need only the timeline: built beside the report.
    std::future<AllocationBands> bands = std::async(
        std::launch::async, [&timeline = data->timeline()] { return AllocationBands(timeline, size_t(kDefaultBands)); });
    DeviceReportOptions options;
    options.capacity = capacity.chosen;
    options.capacitySource = "chosen in the what-if panel";
    options.defaultCapacity = capacity.assumed;
    options.cancel = cancel;
    options.categorySeries = true;
    DeviceReport report = DeviceReport::compute(*data->trace, deviceIndex, options);
    data->analysis = std::move(report.analysis);
    data->capacity = std::move(report.capacity);
    data->findings = std::move(report.findings);
    data->allocator = std::move(report.allocator);
    data->whatIf = std::move(report.whatIf);
    data->calibrationError = std::move(report.calibrationError);
    throwIfCancelled(cancel);
    data->bands = bands.get();
    data->privatePools = privatePoolCurves(data->device(), data->timeline());
    return data;
}

} // namespace headroom
