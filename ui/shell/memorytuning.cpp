// SPDX-License-Identifier: MIT
#include "ui/shell/memorytuning.h"

#include <cstdlib> // defines __GLIBC__ on glibc

#ifdef __GLIBC__
#include <malloc.h>
#endif

namespace headroom {

void tuneAllocatorForInteractiveUse()
{
#ifdef __GLIBC__
    // Untouched padding costs address space, not memory: only the pages the GUI writes
    // become resident.
    mallopt(M_TOP_PAD, 16 << 20);
#endif
}

void returnFreedMemory()
{
#ifdef __GLIBC__
    malloc_trim(0);
#endif
}

} // namespace headroom
