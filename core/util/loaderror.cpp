// SPDX-License-Identifier: MIT
#include "core/util/loaderror.h"

namespace headroom {

static std::string composeMessage(const std::string& file, int64_t offset, const std::string& what)
{
    std::string msg = file.empty() ? std::string("<input>") : file;
    if (offset >= 0)
        msg += ": byte " + std::to_string(offset);
    msg += ": " + what;
    return msg;
}

LoadError::LoadError(std::string file, int64_t offset, std::string what)
    : std::runtime_error(composeMessage(file, offset, what))
    , m_file(std::move(file))
    , m_offset(offset)
    , m_detail(std::move(what))
{
}

} // namespace headroom
