// SPDX-License-Identifier: MIT
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>

namespace headroom {

/// Which JSON values one importer reads as an integer, and how large they may be. The one
/// integer conversion of the JSON importers takes the rule explicitly, so the differences
/// between formats are named in one place instead of three hand-written converters.
struct JsonIntRule {
    /// |value| at most this. Formats whose importer negates and sums the numbers use
    /// kSumSafe, so those sums cannot overflow (found by the bad-input corpus: -2^63 was
    /// negated). kAny64Bits takes every int64 and every uint64 as its two's-complement
    /// bits, as the pickle reader does (addresses, sizes checked later by the loader).
    uint64_t limit;
    /// A non-integral float is rounded (Kineto writes some fields as floats) instead of refused.
    bool roundFractions = false;
    /// A string holding exactly an integer is read (some exporters quote large ints).
    bool quoted = false;
    /// true/false read as 1/0 (a Python bool is an int; snapshot renditions keep them).
    bool bools = false;

    static constexpr uint64_t kSumSafe = uint64_t(1) << 62;
    static constexpr uint64_t kAny64Bits = ~uint64_t(0);
};

/// Rules of the formats that read JSON integers, named once.
namespace jsonrules {
/// Snapshot renditions (`json.dump` of `_snapshot()`): what the pickle path accepts.
inline constexpr JsonIntRule kSnapshot{JsonIntRule::kAny64Bits, false, false, true};
/// Chrome/Kineto trace arguments.
inline constexpr JsonIntRule kChromeTrace{JsonIntRule::kSumSafe, true, true, false};
/// `export_memory_timeline` rows.
inline constexpr JsonIntRule kProfileTimeline{JsonIntRule::kSumSafe, false, false, false};
} // namespace jsonrules

/// The conversion's outcome: a value, or why there is none.
struct JsonInt {
    enum class Status : uint8_t { Ok, NotAnInteger, OutOfRange };
    int64_t value = 0;
    Status status = Status::NotAnInteger;
    bool ok() const { return status == Status::Ok; }
};

/// `v` as an integer under `rule`; never throws, never casts a float out of range.
JsonInt jsonInteger(const nlohmann::json& v, const JsonIntRule& rule);

/// The same, throwing LoadError(file, "PATH: ...") when `v` is not an integer under `rule`:
/// "number N is out of range" or "expected an integer, found TYPE".
int64_t jsonIntegerAt(const nlohmann::json& v, const JsonIntRule& rule, const std::string& file,
                      const std::string& path);

} // namespace headroom
