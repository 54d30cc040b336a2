// SPDX-License-Identifier: MIT
#include "core/io/fakeaddresses.h"

namespace headroom {

uint64_t FakeAddresses::fresh()
{
    const uint64_t a = m_next;
    m_next += kStride;
    return a;
}

uint64_t FakeAddresses::alloc(Key key, uint64_t reuse)
{
    const uint64_t a = reuse != 0 ? reuse : fresh();
    m_live[key].push_back(a);
    return a;
}

uint64_t FakeAddresses::free(Key key)
{
    // Latest first: the allocator reuses what was freed last, and a LIFO pairing keeps
    // short-lived temporaries from being matched with long-lived tensors of the same size.
    auto it = m_live.find(key);
    if (it == m_live.end() || it->second.empty())
        return fresh();
    const uint64_t a = it->second.back();
    it->second.pop_back();
    return a;
}

} // namespace headroom
