// SPDX-License-Identifier: MIT
#include "core/whatif/calibration/whatifmultifit.h"

#include "core/whatif/replay/runlaws.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <stdexcept>

namespace headroom {

namespace {

double sobMeasured(const Calibration& c) { return c.baseline.measuredAllocated[0]; }

/// The terms of the start of backward that grow with the batch (withShape scales them).
double batchPart(const WhatIfBaseline& s) { return s.actLin.bytes + s.logits.bytes + s.actQuad.bytes; }

/// Least squares of y = a + b x.
std::pair<double, double> line(const std::vector<double>& x, const std::vector<double>& y)
{
    const double n = double(x.size());
    double sx = 0, sy = 0, sxx = 0, sxy = 0;
    for (size_t i = 0; i < x.size(); ++i) {
        sx += x[i];
        sy += y[i];
        sxx += x[i] * x[i];
        sxy += x[i] * y[i];
    }
    const double d = n * sxx - sx * sx;
    if (std::abs(d) < 1e-12)
        return {sy / n, 0};
    const double b = (n * sxy - sx * sy) / d;
    return {(sy - b * sx) / n, b};
}

/// Least squares of y = a s + b s^2 (no constant: the constant is the first run's model).
std::pair<double, double> linQuad(const std::vector<double>& s, const std::vector<double>& y)
{
    double s2 = 0, s3 = 0, s4 = 0, ys = 0, ys2 = 0;
    for (size_t i = 0; i < s.size(); ++i) {
        s2 += s[i] * s[i];
        s3 += s[i] * s[i] * s[i];
        s4 += s[i] * s[i] * s[i] * s[i];
        ys += y[i] * s[i];
        ys2 += y[i] * s[i] * s[i];
    }
    const double d = s2 * s4 - s3 * s3;
    if (std::abs(d) < 1e-12)
        return {s2 > 0 ? ys / s2 : 0, 0};
    return {(ys * s4 - ys2 * s3) / d, (s2 * ys2 - s3 * ys) / d};
}

/// Scales the batch terms so that they total `target`, moving the difference to the
/// constant temporaries: the measured total at the first run is kept.
void setBatchPart(WhatIfBaseline& s, double target, double linShare)
{
    const double before = batchPart(s);
    const double lin0 = s.actLin.bytes + s.logits.bytes;
    const double lin = target * linShare, quad = target * (1 - linShare);
    if (lin0 > 0) {
        s.actLin.bytes *= lin / lin0;
        s.logits.bytes *= lin / lin0;
    } else {
        s.actLin.bytes = lin;
    }
    s.actQuad.bytes = quad;
    s.constTemp.bytes = std::max(0.0, s.constTemp.bytes + before - target);
    for (Term* t : {&s.actLin, &s.logits, &s.actQuad, &s.constTemp})
        t->provenance = Provenance::Measured;
}

} // namespace

MultiFit fitCalibrationRuns(const std::vector<Calibration>& runs, const WhatIfConstants& k)
{
    if (runs.empty())
        throw std::invalid_argument("fitCalibrationRuns: no run");
    MultiFit fit;
    fit.baseline = runs.front().baseline;
    WhatIfBaseline& s = fit.baseline;
    // The first run's laws, with each line's growth measured against the other runs.
    if (s.trace) {
        std::vector<const TraceProjector*> others;
        for (size_t i = 1; i < runs.size(); ++i)
            if (runs[i].baseline.trace)
                others.push_back(runs[i].baseline.trace.get());
        RunLawsFit laws = fitLawsAcrossRuns(*s.trace, others);
        s.trace = laws.projector;
        fit.notes.insert(fit.notes.end(), laws.notes.begin(), laws.notes.end());
    }
    const int b0 = s.config.microBatch, s0 = s.config.seq;
    const double m0 = sobMeasured(runs.front());
    std::vector<double> mbX{double(b0)}, mbY{m0}, seqX{double(s0)}, seqM{m0};
    for (size_t i = 1; i < runs.size(); ++i) {
        const LeverConfig& c = runs[i].baseline.config;
        const std::string name = "run " + std::to_string(i + 1);
        if (c.microBatch <= 0 || c.seq <= 0 || b0 <= 0 || s0 <= 0) {
            fit.notes.push_back(name + ": micro-batch or sequence unknown; left out");
        } else if (c.seq == s0 && c.microBatch != b0) {
            mbX.push_back(c.microBatch);
            mbY.push_back(sobMeasured(runs[i]));
        } else if (c.microBatch == b0 && c.seq != s0) {
            seqX.push_back(c.seq);
            seqM.push_back(sobMeasured(runs[i]));
        } else {
            fit.notes.push_back(name + ": moves neither or both of micro-batch and sequence; left out");
        }
    }
    const double linShare0 = batchPart(s) > 0 ? (s.actLin.bytes + s.logits.bytes) / batchPart(s) : 1.0;
    if (mbX.size() >= 2) {
        const auto [constant, perSample] = line(mbX, mbY);
        fit.microBatchFit = true;
        fit.constant = constant;
        fit.perSample = std::max(0.0, perSample);
        setBatchPart(s, fit.perSample * b0, linShare0);
    }
    if (seqX.size() >= 2) {
        // What the model holds constant at the first run (after any micro-batch fit) is
        // taken as independent of the sequence, the smallest-block activations as linear in
        // it (one per step); the batch part is a s + q s^2.
        const double small0 = s.actSmall.bytes;
        const double rest = m0 - batchPart(s) - small0;
        std::vector<double> seqY;
        for (size_t i = 0; i < seqM.size(); ++i)
            seqY.push_back(seqM[i] - rest - small0 * seqX[i] / s0);
        auto [a, q] = linQuad(seqX, seqY);
        if (q < 0) { // no quadratic growth measured: a line through the origin
            double sxy = 0, sxx = 0;
            for (size_t i = 0; i < seqX.size(); ++i) {
                sxy += seqX[i] * seqY[i];
                sxx += seqX[i] * seqX[i];
            }
            a = sxx > 0 ? sxy / sxx : 0;
            q = 0;
        }
        fit.sequenceFit = true;
        fit.linearPerToken = a;
        fit.quadraticPerToken2 = q;
        const double total = a * s0 + q * double(s0) * s0;
        setBatchPart(s, total, total > 0 ? a * s0 / total : 1.0);
    }
    // The residual that matters: each run's measured peak against the refitted baseline's
    // projection to its configuration (the fit uses the start of backward only; a run whose
    // peak lies elsewhere shows here).
    fit.residual = 0;
    const DeviceSpec device = deviceForCapacity(0);
    for (const Calibration& r : runs) {
        const LeverConfig& c = r.baseline.config;
        const bool used = (c.seq == s0 && c.microBatch > 0) || (c.microBatch == b0 && c.seq > 0);
        if (!used || r.measuredPeak <= 0)
            continue;
        LeverConfig t = s.config;
        t.microBatch = c.microBatch;
        t.seq = c.seq;
        const double projected = project(s, t, k, device).peakAllocated;
        fit.residual = std::max(fit.residual, std::abs(projected - r.measuredPeak) / r.measuredPeak);
    }
    // A fit that misses its own runs is no more certain beyond them: the batch-sized terms
    // carry twice that miss into the band.
    if (fit.residual > 0.01)
        for (Term* t : {&s.actLin, &s.actQuad, &s.logits, &s.bwdTemp, &s.optAct})
            t->relErr = std::max(t->relErr, 2 * fit.residual);
    fit.runs = int(mbX.size() + seqX.size()) - 1;
    if (fit.microBatchFit || fit.sequenceFit) {
        char buf[160];
        std::snprintf(buf, sizeof buf, "fitted on %d calibration runs (largest residual %.1f%%)", fit.runs,
                      fit.residual * 100);
        s.notes.push_back(buf);
    }
    // Every frontend shows the projection's notes: the runs left out and the lines matched
    // travel with the baseline, not beside it.
    s.notes.insert(s.notes.end(), fit.notes.begin(), fit.notes.end());
    return fit;
}

} // namespace headroom
