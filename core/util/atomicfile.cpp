// SPDX-License-Identifier: MIT
#include "core/util/atomicfile.h"

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <random>
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

/// "DIR/.NAME.tmp." for "DIR/NAME". The leading dot keeps a temporary that a crash left
/// behind out of directory scans (`headroom-cli summary DIR` reads every file not starting
/// with '.', and rank numbers are parsed from names, so "rank0.hrt.tmp.x" would pass for
/// rank 0), and out of `*.hrt` globs.
std::string tempPrefix(const std::string& path)
{
    const size_t slash = path.rfind('/');
    const std::string base = slash == std::string::npos ? path : path.substr(slash + 1);
    const std::string dir = slash == std::string::npos ? std::string() : path.substr(0, slash + 1);
    return dir + "." + base + ".tmp.";
}

[[noreturn]] void failWith(const std::string& path, const std::string& what, int err)
{
    throw SaveError(path + ": " + what + ": " + std::strerror(err));
}

/// Writes all of bytes and fsyncs; 0 or the errno of the failing call (what names it).
int writeAndSync(int fd, std::span<const uint8_t> bytes, const char** what)
{
    size_t done = 0;
    while (done < bytes.size()) {
        const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            *what = "write failed";
            return errno;
        }
        done += static_cast<size_t>(n);
    }
    if (::fsync(fd) != 0) {
        *what = "fsync failed";
        return errno;
    }
    return 0;
}

/// Links the anonymous O_TMPFILE fd under a fresh hidden name next to path; 0 or errno.
int linkAnonymous(int fd, const std::string& path, std::string* name)
{
    static std::atomic<unsigned> counter{0};
    std::random_device rd;
    const std::string procPath = "/proc/self/fd/" + std::to_string(fd);
    for (int attempt = 0; attempt < 100; ++attempt) {
        char suffix[32];
        std::snprintf(suffix, sizeof suffix, "%08x%04x", rd(), counter++ & 0xffffu);
        *name = tempPrefix(path) + suffix;
        // /proc/self/fd works unprivileged; AT_EMPTY_PATH would need CAP_DAC_READ_SEARCH.
        if (::linkat(AT_FDCWD, procPath.c_str(), AT_FDCWD, name->c_str(), AT_SYMLINK_FOLLOW) == 0)
            return 0;
        if (errno != EEXIST)
            return errno;
    }
    return EEXIST;
}

void renameOver(const std::string& tmp, const std::string& path)
{
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

/// The Linux path: the bytes go to an unnamed O_TMPFILE inode in the target's directory,
/// so a kill during the write or the fsync leaves nothing behind (the kernel frees the
/// inode). Only once complete and synced does it get a hidden name, which is renamed over
/// the target at once. False when the filesystem or kernel cannot do this (no O_TMPFILE,
/// no /proc): the caller then uses a named temporary file.
bool writeAnonymous(const std::string& path, std::span<const uint8_t> bytes)
{
#ifdef O_TMPFILE
    // The mode goes through the umask, as for any newly created file.
    const int fd = ::open(dirOf(path).c_str(), O_TMPFILE | O_WRONLY | O_CLOEXEC, 0666);
    if (fd < 0)
        return false; // EOPNOTSUPP, EISDIR (old kernels), ...; the fallback reports real errors
    const char* what = nullptr;
    if (const int err = writeAndSync(fd, bytes, &what)) {
        ::close(fd);
        failWith(path, what, err);
    }
    std::string tmp;
    const int linkErr = linkAnonymous(fd, path, &tmp);
    ::close(fd);
    if (linkErr == ENOENT || linkErr == EPERM || linkErr == EXDEV)
        return false; // no /proc, or a filesystem that refuses; write it again by name
    if (linkErr != 0)
        failWith(path, "cannot name the temporary file", linkErr);
    renameOver(tmp, path);
    return true;
#else
    (void)path;
    (void)bytes;
    return false;
#endif
}

} // namespace

void AtomicFile::write(const std::string& path, std::span<const uint8_t> bytes)
{
    if (writeAnonymous(path, bytes))
        return;
    std::string tmp = tempPrefix(path) + "XXXXXX";
    const int fd = ::mkostemp(tmp.data(), O_CLOEXEC);
    if (fd < 0)
        failWith(path, "cannot create a temporary file next to it", errno);
    // mkstemp creates 0600; a saved trace should get the usual permissions (umask applies).
    const mode_t mask = ::umask(0);
    ::umask(mask);
    ::fchmod(fd, 0666 & ~mask);
    const char* what = nullptr;
    if (const int err = writeAndSync(fd, bytes, &what)) {
        ::close(fd);
        ::unlink(tmp.c_str());
        failWith(path, what, err);
    }
    if (::close(fd) != 0) {
        const int err = errno;
        ::unlink(tmp.c_str());
        failWith(path, "close failed", err);
    }
    renameOver(tmp, path);
}

} // namespace headroom
