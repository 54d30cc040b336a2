// SPDX-License-Identifier: MIT
#include "ui/plot/categorystyle.h"

#include "core/util/units.h"

#include <QCoreApplication>

namespace headroom {

QColor categoryColor(TensorCategory c)
{
    switch (c) {
    case TensorCategory::Parameter: return QColor(0x4e, 0x79, 0xa7);      // blue
    case TensorCategory::OptimizerState: return QColor(0xb0, 0x7a, 0xa1); // purple
    case TensorCategory::Input: return QColor(0x9c, 0x75, 0x5f);          // brown
    case TensorCategory::Temporary: return QColor(0xed, 0xc9, 0x48);      // yellow
    case TensorCategory::Activation: return QColor(0xf2, 0x8e, 0x2b);     // orange
    case TensorCategory::Gradient: return QColor(0x59, 0xa1, 0x4f);       // green
    case TensorCategory::AutogradDetail: return QColor(0xe1, 0x57, 0x59); // red
    case TensorCategory::Unknown: return QColor(0x9d, 0xa3, 0xa8);        // grey
    case TensorCategory::KvCache: return QColor(0x76, 0xb7, 0xb2);        // teal
    case TensorCategory::EngineWeights: return QColor(0x2b, 0x7c, 0x74);  // dark teal: the KV cache's engine
    }
    return QColor(0x9d, 0xa3, 0xa8);
}

QString categoryDisplayName(TensorCategory c)
{
    switch (c) {
    case TensorCategory::Parameter: return QCoreApplication::translate("headroom", "parameters");
    case TensorCategory::OptimizerState: return QCoreApplication::translate("headroom", "optimizer state");
    case TensorCategory::Input: return QCoreApplication::translate("headroom", "inputs");
    case TensorCategory::Temporary: return QCoreApplication::translate("headroom", "temporaries");
    case TensorCategory::Activation: return QCoreApplication::translate("headroom", "activations");
    case TensorCategory::Gradient: return QCoreApplication::translate("headroom", "gradients");
    case TensorCategory::AutogradDetail: return QCoreApplication::translate("headroom", "autograd detail");
    case TensorCategory::Unknown: return QCoreApplication::translate("headroom", "unknown");
    case TensorCategory::KvCache: return QCoreApplication::translate("headroom", "KV cache");
    case TensorCategory::EngineWeights: return QCoreApplication::translate("headroom", "engine weights");
    }
    return QString();
}

QColor phaseColor(Phase p)
{
    // The light Tableau 20 tones: phases never look like the (darker) categories.
    switch (p) {
    case Phase::Setup: return QColor(0x8c, 0xd1, 0x7d);     // light green
    case Phase::Forward: return QColor(0xa0, 0xcb, 0xe8);   // light blue
    case Phase::Loss: return QColor(0xf1, 0xce, 0x63);      // light yellow
    case Phase::Backward: return QColor(0xff, 0x9d, 0x9a); // light red
    case Phase::Optimizer: return QColor(0xd4, 0xa6, 0xc8); // light purple
    case Phase::Other: return QColor(0xba, 0xb0, 0xac);     // light grey
    }
    return QColor(0xba, 0xb0, 0xac);
}

QString phaseDisplayName(Phase p)
{
    return QString::fromLatin1(phaseKey(p).data(), static_cast<qsizetype>(phaseKey(p).size()));
}

const std::array<TensorCategory, kTensorCategoryCount>& categoryStackOrder()
{
    return kCategoryDisplayOrder;
}

QString formatBytesQ(int64_t bytes, int decimals)
{
    return QString::fromStdString(formatBytes(bytes, decimals));
}

} // namespace headroom
