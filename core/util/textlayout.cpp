// SPDX-License-Identifier: MIT
#include "core/util/textlayout.h"

#include <algorithm>

namespace headroom {

namespace {

size_t indentOf(std::string_view line)
{
    const size_t n = line.find_first_not_of(' ');
    return n == std::string_view::npos ? 0 : n;
}

bool isUnit(std::string_view w)
{
    for (std::string_view unit :
         {"B", "KiB", "MiB", "GiB", "TiB", "B,", "KiB,", "MiB,", "GiB,", "TiB,", "KiB)", "MiB)", "GiB)", "B)"})
        if (w == unit)
            return true;
    return false;
}

/// The next word of `line` (removed from it); "12.69 GiB" is one word: a size never breaks
/// from its unit.
std::string_view takeWord(std::string_view& line)
{
    const std::string_view start = line;
    size_t space = line.find(' ');
    if (space != std::string_view::npos) {
        const std::string_view rest = line.substr(space + 1);
        if (isUnit(rest.substr(0, rest.find(' '))))
            space = line.find(' ', space + 1);
    }
    const std::string_view word = start.substr(0, space);
    line.remove_prefix(space == std::string_view::npos ? line.size() : space + 1);
    return word;
}

void wrapLine(std::string_view line, size_t width, std::string& out)
{
    if (line.size() <= width) {
        out.append(line);
        return;
    }
    // Continuations indent four more, but never so far that little fits.
    const size_t indent = std::min(indentOf(line), width / 2);
    const std::string pad(std::min(indent + 4, width / 2), ' ');
    std::string current(indent, ' ');
    size_t lead = indent; // the indentation of `current`
    line.remove_prefix(indentOf(line));
    auto flush = [&] {
        out += current;
        out += '\n';
        current = pad;
        lead = pad.size();
    };
    while (!line.empty()) {
        std::string_view word = takeWord(line);
        bool atStart = current.size() == lead;
        if (!atStart && current.size() + 1 + word.size() > width) {
            flush();
            atStart = true;
        }
        if (!atStart)
            current += ' ';                            // runs of spaces inside a line survive as empty words
        while (current.size() + word.size() > width) { // a word wider than the room: cut it
            size_t room = width - current.size();
            // A path breaks best after a slash.
            if (const size_t slash = word.substr(0, room).rfind('/');
                slash != std::string_view::npos && slash > room / 2)
                room = slash + 1;
            current.append(word.substr(0, room));
            word.remove_prefix(room);
            flush();
        }
        current.append(word);
    }
    out += current;
}

} // namespace

std::string wrapLines(std::string_view text, size_t width)
{
    std::string out;
    out.reserve(text.size() + text.size() / 16);
    size_t start = 0;
    while (start < text.size()) {
        size_t end = text.find('\n', start);
        const bool newline = end != std::string_view::npos;
        if (!newline)
            end = text.size();
        wrapLine(text.substr(start, end - start), width, out);
        if (newline)
            out += '\n';
        start = end + 1;
    }
    return out;
}

std::string compactFrame(std::string_view frame)
{
    // Native frames print as "file:line:name" with an unknown file ("??" or "").
    for (std::string_view prefix : {std::string_view("??:0:"), std::string_view(":0:")})
        if (frame.substr(0, prefix.size()) == prefix) {
            frame.remove_prefix(prefix.size());
            break;
        }
    if (frame.find(".py:") != std::string_view::npos) {
        // Library code is named well enough from its package on: ".../site-packages/torch/nn/x.py".
        for (std::string_view packages : {std::string_view("/site-packages/"), std::string_view("/dist-packages/")})
            if (const size_t at = frame.rfind(packages); at != std::string_view::npos)
                return std::string(frame.substr(at + packages.size()));
        return std::string(frame);
    }
    const size_t op = frame.find("operator()");
    const size_t open = frame.find('(', op == std::string_view::npos ? 0 : op + 10);
    if (open == std::string_view::npos)
        return std::string(frame);
    // The argument list of a C++ signature ends at its matching parenthesis.
    int depth = 0;
    for (size_t i = open; i < frame.size(); ++i) {
        if (frame[i] == '(')
            ++depth;
        else if (frame[i] == ')' && --depth == 0)
            return std::string(frame.substr(0, open)) + "(...)" + std::string(frame.substr(i + 1));
    }
    return std::string(frame);
}

} // namespace headroom
