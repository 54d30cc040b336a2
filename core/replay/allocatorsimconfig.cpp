// SPDX-License-Identifier: MIT
#include "core/replay/allocatorsimconfig.h"

#include <algorithm>
#include <bit>
#include <cctype>
#include <charconv>
#include <sstream>

namespace headroom {

namespace {

constexpr int64_t kMiB = 1 << 20;

std::string_view trim(std::string_view s)
{
    while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front())))
        s.remove_prefix(1);
    while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back())))
        s.remove_suffix(1);
    return s;
}

std::optional<int64_t> toInt(std::string_view s)
{
    s = trim(s);
    int64_t v = 0;
    auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (ec != std::errc() || p != s.data() + s.size())
        return std::nullopt;
    return v;
}

std::optional<bool> toBool(std::string_view s)
{
    s = trim(s);
    if (s == "True" || s == "true" || s == "1")
        return true;
    if (s == "False" || s == "false" || s == "0")
        return false;
    return std::nullopt;
}

int intervalIndex(int64_t mb)
{
    return std::min(AllocatorConfig::kRoundupIntervals - 1, static_cast<int>(std::bit_width(uint64_t(mb)) - 1));
}

/// "4" or "[256:1,512:2,>:4]" (sizes in MiB, powers of two; '>' covers every larger interval).
bool parseDivisions(std::string_view v, AllocatorConfig& c)
{
    v = trim(v);
    if (v.empty())
        return false;
    if (v.front() != '[') {
        auto n = toInt(v);
        if (!n || *n < 0 || (*n > 1 && !std::has_single_bit(uint64_t(*n))))
            return false;
        c.roundupDivisions.fill(int(*n));
        return true;
    }
    if (v.back() != ']')
        return false;
    v = v.substr(1, v.size() - 2);
    int last = -1;
    bool first = true;
    while (!v.empty()) {
        const size_t comma = v.find(',');
        const std::string_view item = v.substr(0, comma);
        v = comma == std::string_view::npos ? std::string_view() : v.substr(comma + 1);
        const size_t colon = item.find(':');
        if (colon == std::string_view::npos)
            return false;
        const auto value = toInt(item.substr(colon + 1));
        if (!value || *value < 0 || (*value > 1 && !std::has_single_bit(uint64_t(*value))))
            return false;
        const std::string_view key = trim(item.substr(0, colon));
        if (key == ">") {
            std::fill(c.roundupDivisions.begin() + (last + 1), c.roundupDivisions.end(), int(*value));
            last = AllocatorConfig::kRoundupIntervals - 1;
        } else {
            const auto mb = toInt(key);
            if (!mb || *mb <= 0 || !std::has_single_bit(uint64_t(*mb)))
                return false;
            const int at = intervalIndex(*mb);
            if (first) // the first entry also covers the intervals below it
                std::fill(c.roundupDivisions.begin(), c.roundupDivisions.begin() + at, int(*value));
            c.roundupDivisions[size_t(at)] = int(*value);
            last = at;
        }
        first = false;
    }
    return true;
}

} // namespace

int AllocatorConfig::divisionsFor(int64_t size) const
{
    const int logSize = static_cast<int>(std::bit_width(uint64_t(std::max<int64_t>(size, 1)))) - 1;
    const int index = std::clamp(logSize - 20, 0, kRoundupIntervals - 1);
    return roundupDivisions[size_t(index)];
}

std::optional<AllocatorConfig> AllocatorConfig::parse(std::string_view conf, std::string* error)
{
    AllocatorConfig c;
    auto fail = [&](const std::string& why) -> std::optional<AllocatorConfig> {
        if (error)
            *error = why;
        return std::nullopt;
    };
    while (!trim(conf).empty()) {
        // A list value ("[256:1,>:4]") holds commas of its own.
        size_t end = 0;
        int depth = 0;
        for (; end < conf.size(); ++end) {
            depth += conf[end] == '[' ? 1 : conf[end] == ']' ? -1 : 0;
            if (conf[end] == ',' && depth == 0)
                break;
        }
        const std::string_view option = trim(conf.substr(0, end));
        conf = end < conf.size() ? conf.substr(end + 1) : std::string_view();
        if (option.empty())
            continue;
        const size_t colon = option.find(':');
        if (colon == std::string_view::npos)
        {
            std::string why = "'";
            why.append(option);
            why += "': expected key:value";
            return fail(why);
        }
        const std::string_view key = trim(option.substr(0, colon));
        const std::string_view value = trim(option.substr(colon + 1));
        if (key == "max_split_size_mb") {
            const auto mb = toInt(value);
            if (!mb || *mb <= 0)
                return fail("max_split_size_mb: expected a positive number of MiB, got '" + std::string(value) + "'");
            // PyTorch raises values below the 20 MiB large-segment size to it.
            c.maxSplitSize = std::max<int64_t>(*mb, 20) * kMiB;
        } else if (key == "garbage_collection_threshold") {
            double t = 0;
            std::istringstream in{std::string(value)};
            if (!(in >> t) || !in.eof() || t <= 0 || t >= 1)
                return fail("garbage_collection_threshold: expected a number between 0 and 1, got '" +
                            std::string(value) + "'");
            c.garbageCollectionThreshold = t;
        } else if (key == "expandable_segments") {
            const auto b = toBool(value);
            if (!b)
                return fail("expandable_segments: expected True or False, got '" + std::string(value) + "'");
            c.expandableSegments = *b;
        } else if (key == "roundup_power2_divisions") {
            if (!parseDivisions(value, c))
                return fail("roundup_power2_divisions: expected a power of two or [MiB:divisions,...,>:divisions], "
                            "got '" + std::string(value) + "'");
        } else if (key != "backend" && key != "release_lock_on_cudamalloc" && key != "pinned_use_cuda_host_register" &&
                   key != "pinned_num_register_threads" && key != "pinned_use_background_threads" &&
                   key != "graph_capture_record_stream_reuse") {
            return fail("unknown option '" + std::string(key) +
                        "' (expected expandable_segments, max_split_size_mb, garbage_collection_threshold or "
                        "roundup_power2_divisions)");
        }
    }
    return c;
}

AllocatorConfig AllocatorConfig::fromSnapshot(const std::vector<std::pair<std::string, std::string>>& settings,
                                              bool* found)
{
    AllocatorConfig c;
    bool structured = false;
    std::string confText;
    for (const auto& [key, value] : settings) {
        if (key == "PYTORCH_CUDA_ALLOC_CONF") {
            confText = value;
        } else if (key == "max_split_size") {
            structured = true;
            // -1 and SIZE_MAX both mean unlimited.
            if (const auto v = toInt(value); v && *v > 0)
                c.maxSplitSize = *v;
        } else if (key == "garbage_collection_threshold") {
            structured = true;
            std::istringstream in(value);
            double t = 0;
            if (in >> t && t > 0 && t < 1)
                c.garbageCollectionThreshold = t;
        } else if (key == "expandable_segments") {
            structured = true;
            c.expandableSegments = toBool(value).value_or(false);
        } else if (key == "roundup_power2_divisions") {
            structured = true;
            // A dict rendered as text: {'1': 0, '2': 4, ...}; keys in MiB.
            std::string_view v = value;
            while (true) {
                const size_t colon = v.find(':');
                if (colon == std::string_view::npos)
                    break;
                size_t k = colon;
                while (k > 0 && !std::isdigit(static_cast<unsigned char>(v[k - 1])))
                    --k;
                size_t kb = k;
                while (kb > 0 && std::isdigit(static_cast<unsigned char>(v[kb - 1])))
                    --kb;
                size_t ve = colon + 1;
                while (ve < v.size() && !std::isdigit(static_cast<unsigned char>(v[ve])))
                    ++ve;
                size_t vend = ve;
                while (vend < v.size() && std::isdigit(static_cast<unsigned char>(v[vend])))
                    ++vend;
                const auto mb = toInt(v.substr(kb, k - kb));
                const auto div = toInt(v.substr(ve, vend - ve));
                if (mb && div && *mb > 0)
                    c.roundupDivisions[size_t(intervalIndex(*mb))] = int(*div);
                v = v.substr(std::max(vend, colon + 1));
            }
        }
    }
    if (!structured && !confText.empty())
        if (auto parsed = parse(confText))
            c = *parsed;
    if (found)
        *found = structured || !confText.empty();
    return c;
}

std::string AllocatorConfig::text() const
{
    std::string out;
    auto add = [&](const std::string& s) {
        if (!out.empty())
            out += ',';
        out += s;
    };
    if (expandableSegments)
        add("expandable_segments:True");
    if (maxSplitSize != kUnlimited)
        add("max_split_size_mb:" + std::to_string(maxSplitSize / kMiB));
    if (garbageCollectionThreshold > 0) {
        std::ostringstream s;
        s << garbageCollectionThreshold;
        add("garbage_collection_threshold:" + s.str());
    }
    if (std::any_of(roundupDivisions.begin(), roundupDivisions.end(), [](int d) { return d > 0; })) {
        std::string list;
        for (int i = 0; i < kRoundupIntervals; ++i)
        {
            if (i > 0)
                list += ',';
            list += std::to_string(int64_t(1) << i);
            list += ':';
            list += std::to_string(roundupDivisions[size_t(i)]);
        }
        add("roundup_power2_divisions:[" + list + "]");
    }
    return out;
}

} // namespace headroom
