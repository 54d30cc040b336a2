// SPDX-License-Identifier: MIT
#include "app/clichecks.h"

#include <charconv>
#include <cmath>
#include <optional>
#include <string>

namespace headroom::cli {

namespace {

/// The whole string as a finite number, else nothing (no trailing "x", no "nan").
std::optional<double> numberOf(const std::string& text)
{
    double v = 0;
    const char* end = text.data() + text.size();
    const auto [ptr, ec] = std::from_chars(text.data(), end, v);
    if (ec != std::errc() || ptr != end || !std::isfinite(v))
        return std::nullopt;
    return v;
}

/// A number above 0 (and whole, for a count), or a message naming what was found.
CLI::Validator positive(bool whole)
{
    return CLI::Validator(
        [whole](std::string& text) -> std::string {
            const std::optional<double> v = numberOf(text);
            if (!v || *v <= 0 || (whole && *v != std::floor(*v)))
                return std::string(whole ? "expected a whole number above 0" : "expected a number above 0") +
                       ", found '" + text + "'";
            return {};
        },
        "POSITIVE");
}

} // namespace

CLI::Validator positiveWhole() { return positive(true); }

CLI::Validator positiveAmount() { return positive(false); }

} // namespace headroom::cli
