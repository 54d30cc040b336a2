// SPDX-License-Identifier: MIT
#pragma once

// `headroom_tensor` on an alloc entry (docs/formats.md, "What Headroom's recorders add"), read
// over a document accessor (the pickle document; nlohmann::json through JsonTensorDoc). A
// malformed record is dropped, never trusted: it is what a recorder says, not what the
// allocator did, and the trace stays valid without it.

#include "core/model/recordedtensors.h"
#include "core/model/snapshotmodel.h"

#include <cstdint>
#include <limits>
#include <optional>
#include <string_view>

namespace headroom {

/// The names are recordedKindName's (core/model/recordedtensors.h): one table both ways.
inline std::optional<RecordedTensor::Kind> recordedKindFromName(std::string_view s)
{
    using K = RecordedTensor::Kind;
    for (K k : {K::Unknown, K::Parameter, K::Buffer, K::Gradient, K::OptimizerState, K::Activation, K::Temporary,
                K::Input})
        if (recordedKindName(k) == s)
            return k;
    return std::nullopt;
}

inline RecordedTensor::Phase recordedPhaseFromName(std::string_view s)
{
    using P = RecordedTensor::Phase;
    for (P p : {P::Forward, P::Backward, P::Optimizer})
        if (recordedPhaseName(p) == s)
            return p;
    return P::Unknown;
}

/// Entry offsets under `key` (at most 64, each at least `least`): one that is not such an
/// integer drops the whole list (an offset is trusted whole or not at all).
template <class Doc, class Value, class Int>
void readOffsets(const Doc& doc, Value v, std::string_view key, std::vector<Int>& out, int64_t least)
{
    const auto l = doc.get(v, key);
    if (!l || !doc.isList(*l))
        return;
    for (const auto& d : doc.items(*l)) {
        const auto n = doc.asInt(d);
        if (!n || *n < least || *n > int64_t(std::numeric_limits<Int>::max()) || out.size() >= 64) {
            out.clear();
            return;
        }
        out.push_back(Int(*n));
    }
}

/// A dtype a cast asked for: a dtype name, or a positive offset to the entry it follows.
template <class Doc, class Value>
bool readCastTarget(const Doc& doc, const Value& v, RecordedTensor::Cast& c, StringPool& strings)
{
    if (const auto s = doc.asString(v)) {
        c.dtype = strings.intern(*s);
        return true;
    }
    const auto n = doc.asInt(v);
    if (!n || *n <= 0 || *n > int64_t(UINT32_MAX))
        return false;
    c.like = uint32_t(*n);
    return true;
}

/// `casts` ([[input back, target, bytes cast], ...]) and `dtype_arg` (a target); a malformed
/// list is dropped whole.
template <class Doc, class Value>
void readCasts(const Doc& doc, Value v, RecordedTensor& t, StringPool& strings)
{
    if (const auto a = doc.get(v, "dtype_arg"))
        if (!readCastTarget(doc, *a, t.dtypeArg, strings))
            t.dtypeArg = {};
    const auto l = doc.get(v, "casts");
    if (!l || !doc.isList(*l))
        return;
    for (const auto& pair : doc.items(*l)) {
        RecordedTensor::Cast c;
        bool ok = doc.isList(pair) && t.casts.size() < 64;
        if (ok) {
            const auto items = doc.items(pair);
            const auto n = items.size() == 2 || items.size() == 3 ? doc.asInt(items[0]) : std::nullopt;
            ok = n && *n > 0 && *n <= int64_t(UINT32_MAX) && readCastTarget(doc, items[1], c, strings);
            if (ok)
                c.input = uint32_t(*n);
            if (ok && items.size() == 3) {
                const auto b = doc.asInt(items[2]);
                ok = b && *b >= 0;
                c.bytes = ok ? *b : -1;
            }
        }
        if (!ok) {
            t.casts.clear();
            return;
        }
        t.casts.push_back(c);
    }
}

/// Reads the record in `v`; nullopt when it is not a dict with a list of non-negative
/// integers for `shape` (at most 32 dimensions).
template <class Doc, class Value>
std::optional<RecordedTensor> readRecordedTensor(const Doc& doc, Value v, StringPool& strings)
{
    if (!doc.isDict(v))
        return std::nullopt;
    RecordedTensor t;
    const auto shape = doc.get(v, "shape");
    if (!shape || !doc.isList(*shape))
        return std::nullopt;
    for (const auto& d : doc.items(*shape)) {
        const auto n = doc.asInt(d);
        if (!n || *n < 0 || t.shape.size() >= 32)
            return std::nullopt;
        t.shape.push_back(*n);
    }
    if (const auto dt = doc.get(v, "dtype"))
        if (const auto s = doc.asString(*dt))
            t.dtype = strings.intern(*s);
    if (const auto m = doc.get(v, "module"))
        if (const auto s = doc.asString(*m)) {
            t.module = strings.intern(*s);
            t.hasModule = true;
        }
    if (const auto k = doc.get(v, "kind"))
        if (const auto s = doc.asString(*k))
            t.kind = recordedKindFromName(*s).value_or(RecordedTensor::Kind::Unknown);
    if (const auto p = doc.get(v, "phase"))
        if (const auto s = doc.asString(*p))
            t.phase = recordedPhaseFromName(*s);
    if (const auto dims = doc.get(v, "dims"); dims && doc.isDict(*dims)) {
        auto bits = [&](std::string_view key, uint32_t& out) {
            if (const auto l = doc.get(*dims, key); l && doc.isList(*l))
                for (const auto& d : doc.items(*l))
                    if (const auto n = doc.asInt(d); n && *n >= 0 && size_t(*n) < t.shape.size())
                        out |= 1u << unsigned(*n);
        };
        bits("batch", t.batchDims);
        bits("seq", t.seqDims);
    }
    readOffsets(doc, v, "like", t.like, 1);
    if (const auto o = doc.get(v, "op"))
        if (const auto s = doc.asString(*o)) {
            t.op = strings.intern(*s);
            t.hasOp = true;
            readOffsets(doc, v, "inputs", t.inputs, 1);
            readOffsets(doc, v, "saves", t.saves, INT32_MIN + 1);
            readCasts(doc, v, t, strings);
        }
    return t;
}

} // namespace headroom
