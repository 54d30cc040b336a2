// SPDX-License-Identifier: MIT
#pragma once

#include <CLI/CLI.hpp>

namespace headroom::cli {

// CLI11's PositiveNumber names the range it checks ("not in range 0.000000 to 1797...",
// a 309-digit number) and lets "2.5" through to a bare "Could not convert" for a count. These
// say what was expected and what was found, as every other bad input does.

/// A count: a whole number above 0 ("expected a whole number above 0, found '2.5'").
CLI::Validator positiveWhole();
/// An amount: any number above 0 (--params 6.7e9).
CLI::Validator positiveAmount();

} // namespace headroom::cli
