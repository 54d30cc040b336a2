// SPDX-License-Identifier: MIT
#pragma once

// How each allocation of a trace grows with the micro-batch b and the sequence length s
// (docs/whatif-model.md, "Laws"). Every allocation gets the readings its own evidence allows,
// never a property shared by all tensors of a byte size, and the one its own stack favours.

#include "core/analysis/categoryclassifier.h"
#include "core/analysis/phaseclassifier.h"
#include "core/model/frametable.h"
#include "core/replay/replay.h"
#include "core/whatif/widthlaw.h"

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace headroom {

/// bytes = measured bytes * (b/b0)^batch * (s/s0)^seq for one reading.
/// `StepBlock`: one tensor per step of the sequence in the allocator's smallest block (512 B),
/// whose true size (below it) is taken at half a block: it grows with b once b/b0 passes 2.
enum class SizeLaw : uint8_t { Constant, Batch, Sequence, Tokens, TokensBySeq, SeqSquared, StepBlock };
inline constexpr size_t kSizeLawCount = 7;

struct LawExponents {
    int batch = 0, seq = 0;
};
inline uint8_t lawBit(SizeLaw l) { return uint8_t(1u << unsigned(l)); } ///< its bit in an `allowed` mask
/// A multiple of `unit` up to the allocator's rounding to 512 bytes.
bool fitsUnit(int64_t size, int64_t unit);
/// The factor of a law at b/b0 = rb and s/s0 = rs.
double lawFactor(SizeLaw l, double rb, double rs);
LawExponents lawExponents(SizeLaw l); ///< StepBlock: {1, 1}, its growth once past the block
std::string_view sizeLawName(SizeLaw l); ///< "constant", "b", "s", "b*s", "b*s^2", "s^2", "s*max(1,b/2)"
/// The name over s + `offset` tokens: "b*(s+1)^2"; sizeLawName's where offset is 0.
std::string sizeLawName(SizeLaw l, int offset);

/// Why an allocation has its law, least trusted last.
enum class LawEvidence : uint8_t {
    Shape,    ///< the tensor's shape, recorded by a Headroom recorder (`headroom_tensor`)
    Runs,     ///< matched across several runs of the job, exponents fitted
    Category, ///< parameters, gradients, optimizer state and kept state do not grow with b or s
    Stack,    ///< the allocation's own stack decided between readings its size allows
    Steps,    ///< one of a line's allocations per step of the sequence: their number grows with s
    Mirror,   ///< made by the backward: the reading of the forward's tensors of its size
    /// A shape-preserving op joined it to tensors of its exact shape (the recorder's `like`):
    /// the reading of the class's most trusted member
    Op,
    Size,     ///< the size's factorisation alone
};
std::string_view lawEvidenceName(LawEvidence e); ///< "shape", "runs", "category", "stack", "size"

/// What an optimizer change does to an allocation (docs/whatif-model.md, "Optimizer"):
/// its state and the step's parameter-shaped temporaries take the new optimizer's bytes.
/// Sharding and offload ("Sharding and offload") resize those, the parameters and the gradients.
enum class StateRole : uint8_t { Other, OptimizerState, OptimizerTemp, Parameter, Gradient };
inline constexpr size_t kStateRoleCount = 5;

struct AllocationLaw {
    SizeLaw central = SizeLaw::Constant;
    uint8_t allowed = 1; ///< bit per SizeLaw the evidence allows; holds `central`
    LawEvidence evidence = LawEvidence::Size;
    uint16_t group = 0; ///< 1-based index into AllocationLaws::ambiguities(); 0 = not ambiguous
    /// Its sequence is the tokens s + AllocationLaws::tokenOffset() (scores over a ViT's
    /// patches and its class token): the law's s/s0 is (s + c)/(s0 + c).
    bool offset = false;
    WidthClass width = WidthClass::Float; ///< how its bytes follow a precision change
    StateRole role = StateRole::Other;    ///< how its bytes follow an optimizer change

    bool ambiguous() const { return (allowed & ~(1u << unsigned(central))) != 0; }
};

/// Ambiguous allocations of one kind: the same size and the same readings from the same line.
struct LawAmbiguity {
    SizeLaw central = SizeLaw::Tokens;
    uint8_t allowed = 0;
    LawEvidence evidence = LawEvidence::Size;
    bool offset = false; ///< over s + tokenOffset() tokens
    int64_t sizeEach = 0;
    int64_t count = 0;
    uint32_t stack = 0; ///< one representative stack
    std::string where;  ///< its innermost user frame, "file:line:function"
    bool shapeRecorded = false; ///< a recorder wrote its shape, which allows every reading
};

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
    /// token: scores of b*h*(s0+1)^2), read from the recorded shapes; 0: none seen.
    int tokenOffset() const { return m_tokenOffset; }
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
    void readSoftmax(const MemoryTimeline& timeline, const std::vector<AllocationClass>& classes,
                     const FrameTable& frames, const std::vector<uint8_t>& softmaxMade, int64_t tokens,
                     int64_t quadUnit);
    /// Lines that allocate once per step of the sequence (a recurrent loop).
    void readSteps(const MemoryTimeline& timeline, int s0, size_t iterations, int64_t tokens);
    /// The recorded shapes decide the laws of the tensors they describe (activations and
    /// temporaries; state is constant by its category).
    void readShapes(const MemoryTimeline& timeline, const std::vector<std::pair<uint32_t, RecordedTensor>>& tensors,
                    int b0, int s0);
    /// Tensors a shape-preserving op joined (lawlinks.h) take one law: the readings every
    /// member allows, the central one of the most trusted member.
    void readLikes(const MemoryTimeline& timeline, const std::vector<std::pair<uint32_t, RecordedTensor>>& tensors,
                   int b0, int s0);
    /// The backward's allocations without evidence of their own take the forward's readings.
    void readMirror(const MemoryTimeline& timeline, const std::vector<AllocationClass>& classes);
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
    WidthReadings m_widths;
    std::array<int64_t, kStateRoleCount> m_roleBytes{}, m_roleCount{};
};

} // namespace headroom
