// SPDX-License-Identifier: MIT
#include "core/whatif/calibration/settledconfig.h"

#include "core/whatif/calibration/worldsize.h"

#include <string>

namespace headroom {

/// Stage 3: micro-batch and sequence (annotations, else the activations' sizes when the
/// model's width is known), precision (the recorder's record, else what the stacks show;
/// never assumed: an unknown one is projected under each open reading), devices, and the
/// accumulation steps (the backward passes per optimizer step).
SettledConfig settleConfiguration(MeasuredSettler& settler, const StatedConfig& read, const StatedConfig& stated,
                                  const ModelDims& dims, const LivePoint& L1, int backwardSpans,
                                  const PrecisionEvidence& pEvidence)
{
    auto itos = [](int v) { return std::to_string(v); };
    std::optional<int> readB = read.microBatch, readS = read.seq;
    if (dims.hidden > 0 && dims.heads > 0 && (!readB || !readS) && (!stated.microBatch || !stated.seq)) {
        const std::optional<SizeReading> sized = readBatchFromSizes(L1.allocs, dims, stated.seq ? stated.seq : readS,
                                                                    stated.microBatch ? stated.microBatch : readB);
        if (sized && !readB) {
            readB = sized->microBatch;
            settler.addReading({"micro_batch", itos(sized->microBatch), "read", sized->detail});
        }
        if (sized && !readS) {
            readS = sized->seq;
            settler.addReading({"seq", itos(sized->seq), "read", sized->detail});
        }
    }
    SettledConfig out;
    out.microBatch = settler.count("micro_batch", stated.microBatch, readB);
    out.seq = settler.count("seq", stated.seq, readS);
    std::optional<Precision> readP = read.precision;
    if (!readP && pEvidence.precision()) {
        readP = pEvidence.precision();
        settler.addReading({"precision", std::string(precisionName(*readP)), "read", pEvidence.detail()});
    }
    out.precision = settler.precision(stated.precision, readP, pEvidence.detail());
    out.devices = settler.count("devices", stated.devices, read.devices);
    if (read.zero)
        out.zero = settler.count("zero", std::nullopt, read.zero);
    std::optional<int> readK = read.accum;
    if (!readK && backwardSpans > 0) {
        readK = backwardSpans;
        settler.addReading({"accum", itos(backwardSpans), "read", itos(backwardSpans) + " backward passes per optimizer step"});
    }
    out.accum = settler.count("accum", stated.accum, readK);
    return out;
}

/// The device count from the framework's buffers (worldsize.h) where nothing recorded says it,
/// weighed at the precisions still open.
void readDevices(StatedConfig& read, std::vector<MeasuredItem>& readHow, const LoadedTrace& trace, size_t deviceIndex,
                 const DeviceAnalysis& a, const StatedConfig& stated, const PrecisionEvidence& pEvidence)
{
    if (read.devices)
        return;
    const std::optional<Precision> p = stated.precision ? stated.precision : read.precision;
    const std::vector<Precision> open = p ? std::vector<Precision>{*p} : pEvidence.candidates();
    if (auto ws = readWorldSize(trace, deviceIndex, a, open)) {
        if (ws->devices > 0)
            read.devices = ws->devices;
        readHow.push_back(ws->item);
    }
}

} // namespace headroom
