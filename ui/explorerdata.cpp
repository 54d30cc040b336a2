// SPDX-License-Identifier: MIT
#include "ui/explorerdata.h"

namespace headroom {

std::shared_ptr<const ExplorerData> ExplorerData::compute(std::shared_ptr<const LoadedTrace> trace,
                                                          size_t deviceIndex, int64_t defaultCapacity)
{
    auto data = std::make_shared<ExplorerData>();
    data->trace = std::move(trace);
    data->deviceIndex = deviceIndex;
    data->analysis = analyzeDevice(*data->trace, deviceIndex);
    data->categories = categorySeries(data->timeline(), data->analysis.classes);
    data->capacity = estimateCapacity(*data->trace, deviceIndex, std::nullopt);
    if (data->capacity.bytes <= 0 && defaultCapacity > 0)
        data->capacity = {defaultCapacity, "assumed: Preferences or --capacity"};
    data->bands = AllocationBands(data->timeline(), size_t(kDefaultBands));
    data->findings = diagnose(*data->trace, deviceIndex, data->analysis, data->capacity);
    return data;
}

} // namespace headroom
