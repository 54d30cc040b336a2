// SPDX-License-Identifier: MIT
#include "core/io/jsoninteger.h"

#include "core/util/loaderror.h"

#include <cmath>

namespace headroom {

namespace {

constexpr double kTwo63 = 9223372036854775808.0;

JsonInt ok(int64_t v)
{
    return {v, JsonInt::Status::Ok};
}

constexpr JsonInt kNotAnInteger{0, JsonInt::Status::NotAnInteger};
constexpr JsonInt kOutOfRange{0, JsonInt::Status::OutOfRange};

uint64_t magnitude(int64_t v)
{
    // -INT64_MIN overflows; its magnitude as uint64 is well defined.
    return v < 0 ? uint64_t(0) - static_cast<uint64_t>(v) : static_cast<uint64_t>(v);
}

JsonInt fromFloat(double d, const JsonIntRule& rule)
{
    if (!std::isfinite(d))
        return kNotAnInteger;
    // Range before any cast (found by fuzzing: 2.6e101 cast to int64 is undefined). The
    // limit as a double rounds up to 2^64 for kAny64Bits; the int64 check below covers it.
    if (std::fabs(d) > static_cast<double>(rule.limit))
        return kOutOfRange;
    if (rule.roundFractions)
        return ok(static_cast<int64_t>(std::llround(d)));
    if (!(d >= -kTwo63 && d < kTwo63) || d != std::trunc(d))
        return kNotAnInteger;
    return ok(static_cast<int64_t>(d));
}

JsonInt fromString(const std::string& s, const JsonIntRule& rule)
{
    try {
        size_t used = 0;
        const long long r = std::stoll(s, &used);
        if (used != s.size())
            return kNotAnInteger;
        return magnitude(r) > rule.limit ? kOutOfRange : ok(r);
    } catch (const std::exception&) { // not a number, or beyond long long
        return kNotAnInteger;
    }
}

} // namespace

JsonInt jsonInteger(const nlohmann::json& v, const JsonIntRule& rule)
{
    switch (v.type()) {
    case nlohmann::json::value_t::number_unsigned: {
        const uint64_t u = v.get<uint64_t>();
        return u > rule.limit ? kOutOfRange : ok(static_cast<int64_t>(u));
    }
    case nlohmann::json::value_t::number_integer: {
        const int64_t i = v.get<int64_t>();
        return magnitude(i) > rule.limit ? kOutOfRange : ok(i);
    }
    case nlohmann::json::value_t::number_float: return fromFloat(v.get<double>(), rule);
    case nlohmann::json::value_t::boolean: return rule.bools ? ok(v.get<bool>() ? 1 : 0) : kNotAnInteger;
    case nlohmann::json::value_t::string:
        return rule.quoted ? fromString(v.get_ref<const std::string&>(), rule) : kNotAnInteger;
    default: return kNotAnInteger;
    }
}

int64_t jsonIntegerAt(const nlohmann::json& v, const JsonIntRule& rule, const std::string& file,
                      const std::string& path)
{
    const JsonInt r = jsonInteger(v, rule);
    if (r.ok())
        return r.value;
    if (r.status == JsonInt::Status::OutOfRange)
        throw LoadError(file, LoadError::kNoOffset, path + ": number " + v.dump() + " is out of range");
    throw LoadError(file, LoadError::kNoOffset, path + ": expected an integer, found " + v.type_name());
}

} // namespace headroom
