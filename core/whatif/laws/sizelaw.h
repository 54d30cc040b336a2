// SPDX-License-Identifier: MIT
#pragma once

// The vocabulary of the laws (docs/whatif-model.md, "Laws"): how one allocation's bytes follow
// the micro-batch b and the sequence s, the evidence that chose it, and its readings. The
// readers (allocationlaw.h, shapelaw.h, lawlinks.h) share it without including each other.

#include "core/whatif/laws/widthlaw.h"

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
    /// Half a weight's bytes, born in the forward, no more per iteration than weights of twice
    /// its size: the weight's 16-bit autocast cast, which does not grow
    Cast,
    /// Made by the backward while a gradient of its size is alive, no forward tensor of its
    /// size: the incoming gradient accumulated into that .grad, as large as its weight
    Gradient,
    Mirror,   ///< made by the backward: the reading of the forward's tensors of its size
    /// A shape-preserving op joined it to tensors of its exact shape (the recorder's `like`):
    /// the reading of the class's most trusted member
    Op,
    Size,     ///< the size's factorisation alone
};
std::string_view lawEvidenceName(LawEvidence e); ///< "shape", "runs", "category", "stack", "cast", "gradient", ...

/// What an optimizer change does to an allocation (docs/whatif-model.md, "Optimizer"):
/// its state and the step's parameter-shaped temporaries take the new optimizer's bytes.
/// Sharding and offload ("Sharding and offload") resize those, the parameters and the gradients.
/// How an allocation's bytes follow the optimizer, sharding and offload levers. `Gather`: a
/// layer's parameters FSDP or ZeRO-3 gathered, whole at any batch and world size.
enum class StateRole : uint8_t { Other, OptimizerState, OptimizerTemp, Parameter, Gradient, Gather };
inline constexpr size_t kStateRoleCount = 6;

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

} // namespace headroom
