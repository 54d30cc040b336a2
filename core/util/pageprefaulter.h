// SPDX-License-Identifier: MIT
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <thread>

namespace headroom {

/// Faults in, on a second core, the pages that a single-threaded writer is about to write.
///
/// The pickle reader fills arrays that grow with the file (the per-event arrays, the
/// container slots, the memo) front to back into storage reserved up front. perf showed
/// the kernel zeroing those fresh pages on first touch taking 9-15% of a million-event
/// load, all of it on the parser's core. A helper thread asks the kernel to populate each
/// region (MADV_POPULATE_WRITE) a few MiB ahead of what the writer has used, so the
/// zeroing happens on the other core and the writer finds its pages present.
///
/// Populating changes no byte of the memory, so it is safe while the writer writes; it
/// stays `lead` bytes ahead, so at most that much per region is faulted in and not used.
/// A region whose storage moved (the estimate was exceeded and the vector grew) is retired.
/// Without MADV_POPULATE_WRITE (kernels before 5.14, other systems) it does nothing.
class PagePrefaulter {
public:
    static constexpr size_t kMaxRegions = 16;

    explicit PagePrefaulter(size_t leadBytes);
    ~PagePrefaulter(); ///< stops and joins the helper
    PagePrefaulter(const PagePrefaulter&) = delete;
    PagePrefaulter& operator=(const PagePrefaulter&) = delete;

    enum class Access : uint8_t { Write, Read };
    /// Registers the reserved storage [base, base + capacityBytes), before start(); returns
    /// its number for advance(). Ignored (returns kMaxRegions) when the table is full.
    /// Read: a file mapping the writer reads front to back (MADV_POPULATE_READ maps the
    /// page-cache pages, which a reader of a file too large to prefault whole would fault
    /// in 64 KiB at a time); `lead` 0 = the prefaulter's.
    size_t track(const void* base, size_t capacityBytes, Access access = Access::Write, size_t lead = 0);
    void start();
    /// The writer has used `usedBytes` of region `r`, whose storage is now at `base`.
    void advance(size_t r, const void* base, size_t usedBytes);
    /// Wakes the helper after a round of advance() calls.
    void notify();

private:
    struct Region {
        const uint8_t* base = nullptr;
        size_t capacity = 0;
        std::atomic<size_t> used{0};
        std::atomic<bool> retired{false};
        size_t populated = 0; // the helper's own
        size_t lead = 0;
        Access access = Access::Write;
    };
    void loop();

    size_t m_lead;
    size_t m_count = 0;
    std::unique_ptr<Region[]> m_regions;
    std::atomic<uint32_t> m_epoch{0};
    std::atomic<bool> m_stop{false};
    std::thread m_thread;
};

} // namespace headroom
