// SPDX-License-Identifier: MIT
#include "core/replay/stepcurve.h"

#include <algorithm>

namespace headroom {

void StepCurve::assign(size_t n, int64_t v)
{
    m_changes.clear();
    m_values.clear();
    m_count = n;
    if (n > 0) {
        m_changes.push_back(0);
        m_values.push_back(v);
    }
}

void StepCurve::offset(int64_t d)
{
    for (int64_t& v : m_values)
        v += d;
}

int64_t StepCurve::max(int64_t otherwise) const
{
    return m_values.empty() ? otherwise : *std::max_element(m_values.begin(), m_values.end());
}

std::vector<int64_t> StepCurve::dense() const
{
    std::vector<int64_t> out;
    out.reserve(m_count);
    for (size_t k = 0; k < m_changes.size(); ++k) {
        const size_t until = k + 1 < m_changes.size() ? m_changes[k + 1] : m_count;
        out.resize(until, m_values[k]);
    }
    return out;
}

size_t StepCurve::changeAt(size_t event) const
{
    const auto it = std::upper_bound(m_changes.begin(), m_changes.end(), uint32_t(event));
    return size_t(it - m_changes.begin()) - 1;
}

} // namespace headroom
