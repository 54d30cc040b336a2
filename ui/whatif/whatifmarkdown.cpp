// SPDX-License-Identifier: MIT
#include "ui/whatif/whatifmarkdown.h"

#include "core/whatif/calibration/batchratio.h"
#include "core/whatif/query/whatifjson.h"
#include "ui/plot/categorystyle.h"

#include <QObject>
#include <QStringList>

#include <utility>

namespace headroom {

namespace {

/// Projected sizes in the units of the preferences, one decimal ("52.3 GiB", "56.2 GB").
QString projected(double bytes) { return formatBytesQ(int64_t(bytes), 1); }

/// A band's two ends, with the decimals that tell them apart ("3.00 MiB to 3.04 MiB", not
/// "3.0 MiB to 3.0 MiB"), up to three.
std::pair<QString, QString> bandEnds(double low, double high)
{
    int decimals = 1;
    while (decimals < 3 && int64_t(low) != int64_t(high) &&
           formatBytesQ(int64_t(low), decimals) == formatBytesQ(int64_t(high), decimals))
        ++decimals;
    return {formatBytesQ(int64_t(low), decimals), formatBytesQ(int64_t(high), decimals)};
}

/// "model.py:428:scaled_dot_product_attention" of a frame line with its directories.
QString shortWhere(const std::string& where)
{
    const QString w = QString::fromStdString(where);
    const qsizetype slash = w.lastIndexOf(QLatin1Char('/'));
    return slash < 0 ? w : w.mid(slash + 1);
}

} // namespace

QStringList replayLines(const Projection& p)
{
    QStringList out;
    if (!p.replayed)
        return out;
    const auto [low, high] = bandEnds(p.peakAllocatedLow, p.peakAllocatedHigh);
    out << QObject::tr("Allocated peak %1 (band %2 to %3): every allocation of the trace replayed with its own law.")
               .arg(projected(p.peakAllocated), low, high);
    for (const ProjectedAmbiguity& a : p.ambiguities) {
        QStringList other;
        for (const auto& r : a.readings)
            if (r != a.central)
                other << QString::fromStdString(r);
        const QString settle = a.shapeRecorded
                                   ? QObject::tr("Its recorded shape allows each; a run at another %9 would settle it.")
                                   : QObject::tr("Recorded shapes or a run at another %9 would settle it.");
        const auto ends = bandEnds(a.peakIfLowest, a.peakIfHighest);
        const QString why = a.evidence == "cast"       ? QObject::tr("half a weight, one per weight: its autocast cast")
                            : a.evidence == "gradient" ? QObject::tr("a weight's incoming gradient, added into the kept one")
                                                       : QObject::tr("by its %1").arg(QString::fromStdString(a.evidence));
        out << QObject::tr("Ambiguous: %1 x %2 from %3, read as %4 (%5), could be %6: %7 to %8 allocated. ")
                       .append(settle)
                   .arg(a.count)
                   .arg(formatBytesQ(a.sizeEach, 1), shortWhere(a.where), QString::fromStdString(a.central),
                        why, other.join(QObject::tr(" or ")), ends.first, ends.second,
                        settledBySequence(a) ? QObject::tr("sequence length") : QObject::tr("micro-batch"));
    }
    return out;
}

QString rungCosts(const Rung& rung)
{
    QStringList cur;
    for (const auto& [name, v] : rung.currencies)
        if (v != "none")
            cur << QString::fromStdString(name + ": " + v);
    return cur.join(QStringLiteral("; "));
}

QString whatIfMarkdown(const Projection& p, const Ladder& ladder, const Calibration* cal, const DeviceSpec& device)
{
    const LeverConfig& c = p.config;
    // As the measured line has them: what the trace does not tell is not stated as read.
    static const std::vector<MeasuredItem> none;
    const std::vector<MeasuredItem>& measured = cal ? cal->measured : none;
    auto lever = [&](std::string_view key, const std::string& shown) {
        return QString::fromStdString(shown + assumedSuffix(measured, key, shown));
    };
    QString md = QObject::tr("Configuration: micro-batch %1, accumulation %2 (effective batch %3), sequence %4, checkpointing %5, "
                    "precision %6, optimizer %7, ZeRO %8 over %9")
                     .arg(QString::fromStdString(microBatchText(c.microBatch, p.microBatchUnits)),
                          QString::fromStdString(countText(c.accum)),
                          QString::fromStdString(countText(throughputKnown(p) ? c.effectiveBatch() : 0)),
                          QString::fromStdString(countText(c.seq)))
                     .arg(lever("checkpointing", std::string(checkpointName(c.checkpoint, c.checkpointEvery))),
                          lever("precision", std::string(precisionName(c.precision))),
                          QString::fromStdString(std::string(optimizerName(c.optimizer))))
                     .arg(c.zero)
                     .arg(QObject::tr("%1 devices").arg(c.devices) +
                          QString::fromStdString(assumedSuffix(measured, "devices", std::to_string(c.devices))));
    md += QObject::tr(", offload %1, FlashAttention %2.\n\n")
              .arg(QString::fromStdString(std::string(offloadName(c.offload))),
                   lever("flash_attention", c.flashAttention ? "on" : "off"));
    const QString where = p.replayed ? QObject::tr("at event %1 of the trace (replay)").arg(p.replayPeakEvent)
                                     : QObject::tr("in the %1").arg(QString::fromStdString(std::string(p.phaseLabel(p.peakPhase))));
    const QString judged = device.capacityBytes > 0
                               ? QObject::tr("on %1: **%2**").arg(QString::fromStdString(device.name),
                                                                QString::fromStdString(std::string(verdictName(p.verdict))))
                               : QObject::tr("not judged (the capacity is unknown)");
    md += QObject::tr("Projected peak **%1** (band %2 to %3) %4, %5. Step time %6.\n\n")
              .arg(projected(p.peak), projected(p.peakLow), projected(p.peakHigh), where, judged,
                   QString::fromStdString(stepTimeText(p)));
    for (const QString& line : replayLines(p))
        md += QStringLiteral("- ") + line + QStringLiteral("\n");
    if (p.replayed)
        md += QStringLiteral("\n");
    if (cal) {
        QStringList known;
        for (const auto& m : cal->measured)
            if (m.key != "optimizer_bytes")
                known << QStringLiteral("%1 = %2 (%3)").arg(QString::fromStdString(m.key),
                                                         m.value.empty() ? QObject::tr("unknown") : QString::fromStdString(m.value),
                                                         QString::fromStdString(m.how));
        md += QObject::tr("Calibrated on the trace; measured configuration: %1.\n\n").arg(known.join(QStringLiteral(", ")));
    }
    if (device.capacityBytes <= 0) {
        md += QObject::tr("No ladder: nothing to fit without a capacity.\n");
        return md;
    }
    if (ladder.fitsAsIs) {
        md += QObject::tr("The ladder: it fits as it is.\n");
        return md;
    }
    md += QObject::tr("The ladder (cheapest currency first):\n\n| # | Rung | Peak (high) | Verdict | Step time | Costs |\n|---:|---|---:|---|---:|---|\n");
    for (size_t i = 0; i < ladder.rungs.size(); ++i) {
        const Rung& r = ladder.rungs[i];
        md += QStringLiteral("| %1 | %2 | %3 (%4) | %5 | %6 | %7 |\n")
                  .arg(i + 1)
                  .arg(QString::fromStdString(r.title), projected(r.projection.peak), projected(r.projection.peakHigh),
                       QString::fromStdString(std::string(verdictName(r.projection.verdict))))
                  .arg(QString::fromStdString(rungTimeText(r.projection)))
                  .arg(rungCosts(r));
    }
    md += ladder.firstFit >= 0 ? QObject::tr("\nFirst rung that fits: %1.\n").arg(ladder.firstFit + 1)
                                 : QObject::tr("\nNo rung fits: this job needs a different plan.\n");
    for (const auto& w : ladder.warnings)
        md += QStringLiteral("\n> ") + QString::fromStdString(w) + QStringLiteral("\n");
    return md;
}

QString rungSettings(const Ladder& ladder, size_t i)
{
    // Rungs are cumulative: applying one applies the ones above it too, so each says so.
    const Rung& r = ladder.rungs[i];
    QStringList sets;
    for (const std::string& l : r.levers)
        sets << QString::fromStdString(l);
    QString text = sets.isEmpty() ? QObject::tr("sets nothing new") : QObject::tr("sets %1").arg(sets.join(QStringLiteral(", ")));
    if (i == 1)
        text += QObject::tr("; with rung 1's settings");
    else if (i > 1)
        text += QObject::tr("; with the settings of rungs 1-%1").arg(i);
    return text;
}

QString projectionSummaryHtml(const Projection& p, const DeviceSpec& device, const WhatIfConstants& k)
{
    auto projected = [](double bytes) { return formatBytesQ(int64_t(bytes), 1); };
    const QString color = p.verdict == Verdict::Fits ? QStringLiteral("#2e7d32")
                          : p.verdict == Verdict::Tight ? QStringLiteral("#ef6c00")
                                                        : QStringLiteral("#c62828");
    const QString where = p.replayed ? QObject::tr("at event %1 of the trace (replay)").arg(p.replayPeakEvent)
                                     : QObject::tr("in the %1").arg(QString::fromStdString(std::string(p.phaseLabel(p.peakPhase))));
    QString s = QStringLiteral("<b>Peak %1</b> (%2 .. %3) %4 &mdash; ")
                    .arg(projected(p.peak), projected(p.peakLow), projected(p.peakHigh), where);
    if (device.capacityBytes > 0)
        s += QStringLiteral("<b style='color:%1'>%2</b> on %3<br>")
                 .arg(color, QString::fromStdString(std::string(verdictName(p.verdict))), QString::fromStdString(device.name));
    else // nothing to judge against: no red verdict for a card nobody chose
        s += QObject::tr("<b>not judged</b>: the capacity is unknown, choose one under <i>Capacity</i><br>");
    s += QObject::tr("Step time %1").arg(QString::fromStdString(stepTimeText(p)).toHtmlEscaped());
    if (throughputKnown(p))
        s += QObject::tr("; effective batch %1").arg(p.config.effectiveBatch());
    if (!p.time.known)
        return s; // no parts of a time nobody measured
    QStringList items;
    auto item = [&](const char* name, double v) {
        if (v > 1e-6)
            items << QStringLiteral("%1 %2 s").arg(QString::fromLatin1(name)).arg(v, 0, 'f', 3);
    };
    item("compute", p.time.compute);
    item("utilisation", p.time.utilisation);
    item("recompute", p.time.recompute);
    item("communication", p.time.communication);
    item("offload", p.time.offload);
    item("optimizer", p.time.optimizer);
    s += QStringLiteral("<br><small>") + items.join(QStringLiteral(", ")) + QStringLiteral(" &middot; MFU %1 [guess], overlap %2 [guess]</small>")
             .arg(k.mfuMax).arg(k.overlap);
    return s;
}

} // namespace headroom
