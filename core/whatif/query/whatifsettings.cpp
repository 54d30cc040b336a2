// SPDX-License-Identifier: MIT
#include "core/whatif/query/whatifsettings.h"

#include "core/whatif/calibration/batchratio.h"

#include <cmath>

namespace headroom {

namespace {

template <typename T>
void readNumber(const nlohmann::json& o, const char* key, T& out)
{
    const auto it = o.find(key);
    if (it != o.end() && it->is_number())
        out = it->get<T>();
}

std::string readString(const nlohmann::json& o, const char* key)
{
    const auto it = o.find(key);
    return it != o.end() && it->is_string() ? it->get<std::string>() : std::string();
}

} // namespace

nlohmann::json leverConfigJson(const LeverConfig& c)
{
    return {{"micro_batch", c.microBatch},
            {"accum", c.accum},
            {"effective_batch", c.effectiveBatch()},
            {"seq", c.seq},
            {"checkpoint", std::string(checkpointName(c.checkpoint, c.checkpointEvery))},
            {"precision", std::string(precisionName(c.precision))},
            {"optimizer", std::string(optimizerName(c.optimizer))},
            {"zero", c.zero},
            {"devices", c.devices},
            {"offload", std::string(offloadName(c.offload))},
            {"flash_attn", c.flashAttention},
            {"lora_fraction", c.trainableFraction},
            {"expandable_segments", c.expandableSegments}};
}

LeverConfig rebasedLevers(const LeverConfig& edited, const LeverConfig& from, const LeverConfig& to)
{
    const nlohmann::json e = leverConfigJson(edited), f = leverConfigJson(from);
    nlohmann::json moved = nlohmann::json::object();
    for (const auto& [key, value] : e.items())
        if (key != "effective_batch" && f.value(key, nlohmann::json()) != value)
            moved[key] = value;
    WhatIfSettings defaults;
    defaults.config = to;
    const std::optional<WhatIfSettings> s = whatIfSettingsFromJson({{"whatif", moved}}, defaults);
    return s ? s->config : to;
}

nlohmann::json whatIfSettingsJson(const WhatIfSettings& s)
{
    nlohmann::json o = leverConfigJson(s.config);
    o.erase("effective_batch"); // derived: not a setting
    if (s.microBatchUnits > 0) {
        o.erase("micro_batch");
        o["micro_batch_ratio"] = double(s.config.microBatch) / s.microBatchUnits;
    }
    o["capacity_bytes"] = s.capacityBytes;
    if (s.stated.microBatch) o["measured_micro_batch"] = *s.stated.microBatch;
    if (s.stated.seq) o["measured_seq"] = *s.stated.seq;
    if (s.stated.precision) o["measured_precision"] = std::string(precisionName(*s.stated.precision));
    if (s.stated.devices) o["measured_devices"] = *s.stated.devices;
    if (s.spendFirst) o["spend_first"] = std::string(currencyName(*s.spendFirst));
    nlohmann::json constants = nlohmann::json::object();
    const WhatIfConstants defaults;
    for (const auto& e : WhatIfConstants::entries())
        if (s.constants.*(e.member) != defaults.*(e.member))
            constants[e.key] = s.constants.*(e.member);
    if (!constants.empty())
        o["constants"] = constants;
    return {{"whatif", o}};
}

std::optional<WhatIfSettings> whatIfSettingsFromJson(const nlohmann::json& j, const WhatIfSettings& defaults)
{
    if (!j.is_object() || !j.contains("whatif") || !j["whatif"].is_object() || j["whatif"].empty())
        return std::nullopt;
    const nlohmann::json& o = j["whatif"];
    WhatIfSettings s = defaults;
    if (const auto it = o.find("constants"); it != o.end() && it->is_object())
        for (const auto& e : WhatIfConstants::entries()) {
            const auto v = it->find(e.key);
            if (v != it->end() && v->is_number() && std::isfinite(v->get<double>()) && v->get<double>() >= 0)
                s.constants.*(e.member) = v->get<double>();
        }
    s.spendFirst = currencyFromName(readString(o, "spend_first"));
    s.stated = {};
    if (o.contains("measured_micro_batch") && o["measured_micro_batch"].is_number())
        s.stated.microBatch = o["measured_micro_batch"].get<int>();
    if (o.contains("measured_seq") && o["measured_seq"].is_number())
        s.stated.seq = o["measured_seq"].get<int>();
    if (o.contains("measured_devices") && o["measured_devices"].is_number())
        s.stated.devices = o["measured_devices"].get<int>();
    s.stated.precision = precisionFromName(readString(o, "measured_precision"));

    LeverConfig& c = s.config;
    if (o.contains("micro_batch") && o["micro_batch"].is_number())
        s.microBatchUnits = 0;
    readNumber(o, "micro_batch", c.microBatch);
    if (const auto it = o.find("micro_batch_ratio"); it != o.end() && it->is_number() && it->get<double>() > 0) {
        c.microBatch = std::max(1, int(std::lround(it->get<double>() * kBatchRatioUnits)));
        s.microBatchUnits = kBatchRatioUnits;
    }
    readNumber(o, "accum", c.accum);
    readNumber(o, "seq", c.seq);
    int every = 1;
    if (checkpointFromName(readString(o, "checkpoint"), c.checkpoint, every))
        c.checkpointEvery = every;
    if (auto p = precisionFromName(readString(o, "precision"))) c.precision = *p;
    if (auto p = optimizerFromName(readString(o, "optimizer"))) c.optimizer = *p;
    readNumber(o, "zero", c.zero);
    readNumber(o, "devices", c.devices);
    if (auto p = offloadFromName(readString(o, "offload"))) c.offload = *p;
    if (const auto it = o.find("flash_attn"); it != o.end() && it->is_boolean()) c.flashAttention = it->get<bool>();
    readNumber(o, "lora_fraction", c.trainableFraction);
    if (const auto it = o.find("expandable_segments"); it != o.end() && it->is_boolean())
        c.expandableSegments = it->get<bool>();
    readNumber(o, "capacity_bytes", s.capacityBytes);
    return s;
}

} // namespace headroom
