// SPDX-License-Identifier: MIT
#include "core/whatif/calibration/scoresautocast.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string_view>

namespace headroom {

namespace {

double savedFactor(int n, bool dropoutMask)
{
    return attentionScoreBytes(Precision::AmpBf16, n, dropoutMask) / attentionScoreBytes(Precision::Fp32, n, dropoutMask);
}

int64_t largestScore(const std::vector<ScoreTensor>& alive)
{
    int64_t unit = 0;
    for (const ScoreTensor& t : alive)
        if (t.score)
            unit = std::max(unit, t.bytes);
    return unit;
}

bool unitSized(int64_t bytes, int64_t unit) { return bytes * 100 >= unit * 99; }

/// 1 B a score beside 4 B ones (allocations round up to 512 B).
bool maskSized(int64_t bytes, int64_t unit) { return bytes * 4 >= unit && bytes * 4 - unit < 4 * 512; }

} // namespace

ScoresReading readSavedScores(std::vector<ScoreTensor> alive, int seq)
{
    ScoresReading r;
    const int64_t unit = largestScore(alive);
    if (unit <= 0 || seq <= 0)
        return r;
    std::stable_sort(alive.begin(), alive.end(), [](const ScoreTensor& x, const ScoreTensor& y) { return x.start < y.start; });
    const double separator = 4.0 * double(unit) / seq;
    int units = 0, masks = 0;
    bool open = false;
    for (const ScoreTensor& t : alive) {
        if (!t.score) {
            if (double(t.bytes) > separator)
                open = false;
            continue;
        }
        if (unitSized(t.bytes, unit)) {
            ++units;
            r.calls += !open;
            open = true;
        } else if (maskSized(t.bytes, unit)) {
            ++masks;
        }
    }
    r.perCall = std::max(1, int(std::lround(double(units) / std::max(1, r.calls))));
    r.dropout = masks > 0;
    r.factor = r.low = r.high = savedFactor(r.perCall, r.dropout);
    char text[200];
    std::snprintf(text, sizeof text, "%d attention calls (runs of score-sized tensors between the layers' "
                  "activations), %d saved by each%s", r.calls, r.perCall, r.dropout ? " and a dropout mask" : "");
    r.evidence = text;
    return r;
}

ScoresReading readForwardScores(const std::vector<ScoreTensor>& alive)
{
    ScoresReading r;
    const int64_t unit = largestScore(alive);
    if (unit <= 0)
        return r;
    int n = 0;
    for (const ScoreTensor& t : alive)
        n += t.score && unitSized(t.bytes, unit);
    r.calls = 1;
    r.perCall = n;
    r.factor = r.high = (2.0 * (n - 1) + 8.0) / (4.0 * n);
    r.low = 0.5;
    char text[160];
    std::snprintf(text, sizeof text, "%d score-sized tensors alive at the peak; CUDA runs the softmax after them in fp32", n);
    r.evidence = text;
    return r;
}

ScoresAutocastRead readScoresAutocast(const std::vector<ScoreTensor>& saved, const std::vector<ScoreTensor>& temps,
                                      double batchTemps, int seq)
{
    ScoresAutocastRead out;
    ScoresAutocast& f = out.factors;
    const ScoresReading s = readSavedScores(saved, seq), t = readForwardScores(temps);
    f.saved = s.factor;
    double held = 0;
    for (const ScoreTensor& x : temps)
        held += x.score ? double(x.bytes) : 0.0;
    f.temps = t.factor, f.tempsLow = t.low;
    f.tempsShare = batchTemps > 0 ? std::min(1.0, held / batchTemps) : 0;
    const ScoresReading& shown = s.factor > 0 ? s : t;
    if (shown.factor <= 0)
        return out;
    char value[80];
    if (shown.low == shown.high)
        std::snprintf(value, sizeof value, "x%.2f", shown.factor);
    else
        std::snprintf(value, sizeof value, "x%.2f (x%.2f .. x%.2f)", shown.factor, shown.low, shown.high);
    out.item = {"scores_under_cuda_autocast", value, "read",
                (s.factor > 0 ? "saved: " : "at the peak: ") + shown.evidence};
    return out;
}

} // namespace headroom
