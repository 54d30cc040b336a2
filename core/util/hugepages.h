// SPDX-License-Identifier: MIT
#pragma once

#include <cstddef>

namespace headroom {

/// Asks the kernel to back the 2 MiB-aligned part of [p, p + bytes) with transparent huge
/// pages when it is first touched (Linux with THP in "madvise" mode, the Debian default).
/// The big per-event arrays of a load (tens of MB each) otherwise take one page fault per
/// 4 KiB: on a million-event .hrt that was more time than decompressing and replaying.
/// A hint only: does nothing for small ranges, on other systems, or when refused.
void adviseHugePages(const void* p, size_t bytes);

/// v.reserve(n) plus the hint, before anything is written to the new storage.
template <typename Vector>
void reserveHuge(Vector& v, size_t n)
{
    v.reserve(n);
    adviseHugePages(v.data(), v.capacity() * sizeof(typename Vector::value_type));
}

} // namespace headroom
