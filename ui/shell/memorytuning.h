// SPDX-License-Identifier: MIT
#pragma once

namespace headroom {

/// Sets the C allocator up for a window that stays responsive while worker threads
/// allocate hundreds of megabytes (a load, an analysis): the GUI thread's heap (glibc's
/// main arena) grows in steps of 16 MiB instead of one brk() per few hundred kilobytes.
/// Each brk() waits for the process's memory-map lock, which the workers' mappings and
/// page faults hold: the GUI thread's paint buffers for the panels shown at load start
/// waited up to 20 ms for it (measured with `tst_gui "[.benchmark]"`: the longest input
/// latency of six runs went from 37-56 ms to 21-37 ms; the process keeps about 10 MiB
/// more after a cancelled load). Call once, first thing in main(). No effect off glibc.
void tuneAllocatorForInteractiveUse();

/// Gives the pages freed by a cancelled or failed load back to the system (glibc keeps
/// them in the worker's arena), so the memory a cancel frees shows in the process size.
void returnFreedMemory();

} // namespace headroom
