// SPDX-License-Identifier: MIT
#pragma once

// How each allocation of a trace grows with the micro-batch b and the sequence length s
// (docs/whatif-model.md, "Laws"). Every allocation gets the readings its own evidence allows,
// never a property shared by all tensors of a byte size, and the one its own stack favours.

#include "core/analysis/categoryclassifier.h"
#include "core/analysis/phaseclassifier.h"
#include "core/model/frametable.h"
#include "core/replay/replay.h"
#include "core/whatif/laws/shapelaw.h"
#include "core/whatif/laws/sizelaw.h"
#include "core/whatif/laws/widthlaw.h"

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace headroom {

class AllocationLaws {
public:
    /// One plain snapshot: categories first, then each allocation's size and stack. `b0` and
    /// `s0` are the measured micro-batch and sequence (both > 0); `autocast` says the run
    /// cast fp32 weights to 16 bits, whose casts look like activations; `iterations` are the
    /// training steps the trace holds.
    /// `tensors`: what a recorder wrote of the alloc entries (TraceEvents::tensors), the most
    /// trusted evidence where present.
    static AllocationLaws fromSnapshot(const MemoryTimeline& timeline, const std::vector<AllocationClass>& classes,
                                       const FrameTable& frames, int b0, int s0, bool autocast,
                                       const std::vector<Iteration>& iterations = {},
                                       const std::vector<std::pair<uint32_t, RecordedTensor>>& tensors = {});
    /// Tokens beyond the stated sequence that the attention scores are taken over (a class
    /// token: scores of b*h*(s0+1)^2), read from the recorded shapes, else from the sizes of
    /// the scores (tokenoffset.h); 0: none seen.
    int tokenOffset() const { return m_tokenOffset; }
    /// Whether b0 or s0 equals one of the model's widths, so the shapes' marks of it tell nothing alone.
    MarkCoincidence markCoincidence() const { return m_markCoincidence; }
    /// How the allocations' element widths were read (docs/whatif-model.md, "Precision").
    const WidthReadings& widths() const { return m_widths; }
    /// Measured bytes and allocations per StateRole.
    int64_t roleBytes(StateRole r) const { return m_roleBytes[size_t(r)]; }
    int64_t roleCount(StateRole r) const { return m_roleCount[size_t(r)]; }
    /// Allocations whose law a recorded shape decided.
    size_t shapeRead() const { return m_shapeRead; }

    const std::vector<AllocationLaw>& laws() const { return m_laws; }
    const std::vector<LawAmbiguity>& ambiguities() const { return m_ambiguities; }
    /// Bytes (at the measured run) whose central reading from the snapshot is `l`.
    int64_t bytesWith(SizeLaw l) const { return m_bytes[size_t(l)]; }
    /// Allocations that may be b*s^2 (attention scores) by their size and stack.
    int64_t quadraticPossible() const { return m_quadPossible; }
    /// Allocation i's line of code in a form two files of one job share: a hash of its
    /// stack's six innermost Python frames as text (every frame where it has none); 0: none.
    uint64_t lineOf(size_t i) const { return m_lineHashes[m_lines[i]]; }
    size_t count() const { return m_laws.size(); }
    size_t iterations() const { return m_iterations; }
    /// Another run of the job measured the exponent of one lever (`batch`: b, else s) for
    /// allocation i: readings that disagree are dropped, and the central law follows.
    void settle(size_t i, bool batch, int exponent);
    /// The same laws with each allocation's width class replaced and more allocations appended,
    /// each with the law of the allocation it copies and a width of its own (autocast's
    /// history: autocastplan.h).
    AllocationLaws withWidths(const std::vector<WidthClass>& widths,
                              const std::vector<std::pair<uint32_t, WidthClass>>& copies) const;

private:
    /// A softmax's output, and tensors of its size made in the call that takes the softmax.
    /// `withoutShapes`: no shape was recorded (the op links cannot join the scores at a
    /// coincident size, so the lines of the call read them).
    void readSoftmax(const MemoryTimeline& timeline, const std::vector<AllocationClass>& classes,
                     const FrameTable& frames, const std::vector<uint8_t>& softmaxMade, int64_t tokens,
                     int64_t quadUnit, bool withoutShapes);
    /// Without recorded shapes: scores over s0 + c tokens, by their sizes (tokenoffset.h).
    void readSizeOffset(const MemoryTimeline& timeline, const std::vector<AllocationClass>& classes, int b0, int s0);
    /// Lines that allocate once per step of the sequence (a recurrent loop).
    void readSteps(const MemoryTimeline& timeline, int s0, size_t iterations, int64_t tokens);
    /// The recorded shapes decide the laws of the tensors they describe (activations and
    /// temporaries; state is constant by its category).
    /// One recorded shape (not over s0 + c tokens): what its marks allow, a coincident mark as either.
    void readShape(size_t i, int64_t size, const RecordedTensor& t, uint32_t event,
                   const std::vector<std::pair<uint32_t, RecordedTensor>>& tensors, int b0, int s0,
                   MarkCoincidence coincident);
    void readShapes(const MemoryTimeline& timeline, const std::vector<std::pair<uint32_t, RecordedTensor>>& tensors,
                    int b0, int s0);
    /// Tensors a shape-preserving op joined (lawlinks.h) take one law: the readings every
    /// member allows, the central one of the most trusted member.
    void readLikes(const MemoryTimeline& timeline, const std::vector<std::pair<uint32_t, RecordedTensor>>& tensors,
                   int b0, int s0);
    /// The backward's allocations without evidence of their own take the forward's readings.
    void readMirror(const MemoryTimeline& timeline, const std::vector<AllocationClass>& classes);
    /// After the shapes and the ops: the backward's tensors of a gradient's size may be a
    /// weight's incoming gradient (incominggradients.h), which does not grow.
    void readIncomingGradients(const MemoryTimeline& timeline, const std::vector<AllocationClass>& classes,
                               const std::vector<std::pair<uint32_t, RecordedTensor>>& tensors);
    /// Autocast: of the activations of half a weight's size, one per weight and iteration is
    /// the weight's 16-bit cast.
    void readCasts(const MemoryTimeline& timeline, const std::vector<AllocationClass>& classes,
                   const std::vector<Iteration>& iterations);
    /// Floating point or integer, by the recorded dtype where there is one.
    void readWidths(const MemoryTimeline& timeline, const std::vector<AllocationClass>& classes,
                    const std::vector<std::pair<uint32_t, RecordedTensor>>& tensors, const StringPool& strings,
                    int64_t tokens);
    /// The optimizer's state and its step's temporaries, by category and phase.
    void readRoles(const MemoryTimeline& timeline, const std::vector<AllocationClass>& classes);
    void setCentral(size_t i, SizeLaw l, LawEvidence e, int64_t size);
    /// Groups the ambiguous allocations by size, line and readings, and names each group's line.
    void collectAmbiguities(const MemoryTimeline& timeline, const FrameTable& frames,
                            const std::vector<std::pair<uint32_t, RecordedTensor>>& tensors);
    void hashLines(const MemoryTimeline& timeline, const FrameTable& frames);

    std::vector<AllocationLaw> m_laws;
    std::vector<LawAmbiguity> m_ambiguities;
    /// Per allocation, an index into m_lineHashes: 4 bytes an allocation, not 8 (a job has
    /// a few thousand lines; a 10M-event trace 5M allocations, docs/performance.md).
    std::vector<uint32_t> m_lines;
    std::vector<uint64_t> m_lineHashes;
    size_t m_iterations = 1;
    std::array<int64_t, kSizeLawCount> m_bytes{};
    int64_t m_quadPossible = 0;
    size_t m_shapeRead = 0;
    int m_tokenOffset = 0;
    MarkCoincidence m_markCoincidence;
    WidthReadings m_widths;
    std::array<int64_t, kStateRoleCount> m_roleBytes{}, m_roleCount{};
};

} // namespace headroom
