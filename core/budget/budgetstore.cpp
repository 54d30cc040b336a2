// SPDX-License-Identifier: MIT
#include "core/budget/budgetstore.h"

#include <regex>

namespace headroom {

bool isPostgresUrl(const std::string& where)
{
    return where.rfind("postgresql://", 0) == 0 || where.rfind("postgres://", 0) == 0;
}

std::string redactStoreUrl(const std::string& url)
{
    if (!isPostgresUrl(url))
        return url;
    // scheme://user:PASSWORD@host... and ?password=... (libpq reads both).
    static const std::regex userinfo(R"(^(postgres(?:ql)?://[^:@/?]*):[^/?]*@)");
    static const std::regex param(R"(([?&]password=)[^&]*)");
    std::string out = std::regex_replace(url, userinfo, "$1:***@");
    return std::regex_replace(out, param, "$1***");
}

} // namespace headroom
