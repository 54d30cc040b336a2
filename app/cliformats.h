// SPDX-License-Identifier: MIT
#pragma once

#include <string>
#include <vector>

namespace headroom::cli {

/// `headroom-cli summary A B ...` / `summary DIR`: the per-rank table (and with --json every
/// file's summary too). Returns the exit code.
int multiSummary(const std::vector<std::string>& inputs, bool json);
/// `headroom-cli convert IN OUT.hrt`: loads IN (any format) and writes it atomically as .hrt.
int convert(const std::string& in, const std::string& out, bool uncompressed);

} // namespace headroom::cli
