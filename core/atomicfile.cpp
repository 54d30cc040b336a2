// SPDX-License-Identifier: MIT
#include "core/atomicfile.h"

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace headroom {

namespace {

std::string dirOf(const std::string& path)
{
    const size_t slash = path.rfind('/');
    if (slash == std::string::npos)
        return ".";
    return slash == 0 ? "/" : path.substr(0, slash);
}

[[noreturn]] void failWith(const std::string& path, const std::string& what, int err)
{
    throw SaveError(path + ": " + what + ": " + std::strerror(err));
}

} // namespace

void AtomicFile::write(const std::string& path, std::span<const uint8_t> bytes)
{
    std::string tmp = path + ".tmp.XXXXXX";
    const int fd = ::mkstemp(tmp.data());
    if (fd < 0)
        failWith(path, "cannot create a temporary file next to it", errno);
    auto abandon = [&](const char* what) {
        const int err = errno;
        ::close(fd);
        ::unlink(tmp.c_str());
        failWith(path, what, err);
    };
    // mkstemp creates 0600; a saved trace should get the usual permissions (umask applies).
    const mode_t mask = ::umask(0);
    ::umask(mask);
    ::fchmod(fd, 0666 & ~mask);
    size_t done = 0;
    while (done < bytes.size()) {
        const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            abandon("write failed");
        }
        done += static_cast<size_t>(n);
    }
    if (::fsync(fd) != 0)
        abandon("fsync failed");
    if (::close(fd) != 0) {
        const int err = errno;
        ::unlink(tmp.c_str());
        failWith(path, "close failed", err);
    }
    if (::rename(tmp.c_str(), path.c_str()) != 0) {
        const int err = errno;
        ::unlink(tmp.c_str());
        failWith(path, "cannot replace the file", err);
    }
    const int dfd = ::open(dirOf(path).c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd >= 0) {
        ::fsync(dfd); // best effort: makes the rename itself durable
        ::close(dfd);
    }
}

} // namespace headroom
