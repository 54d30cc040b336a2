// SPDX-License-Identifier: MIT
#include "app/clidoctor.h"

#include "core/analysis/capturedoctor.h"
#include "core/io/loader.h"
#include "core/util/loaderror.h"

#include <sstream>

namespace headroom::cli {

void DoctorCommand::add(CLI::App& app)
{
    m_cmd = app.add_subcommand("doctor", "Is this capture good enough? What the file cannot show and how to record one "
                                         "that can");
    m_cmd->add_option("FILE", m_file, "Snapshot or trace file")->required();
    m_cmd->add_flag("--json", m_json, "Machine-readable JSON output");
}

CommandOutput doctorOutput(const LoadedTrace& trace)
{
    const std::vector<CaptureFinding> findings = CaptureDoctor::examine(trace);
    size_t warnings = 0;
    for (const CaptureFinding& f : findings)
        warnings += f.severity == CaptureFinding::Severity::Warning;
    nlohmann::json list = nlohmann::json::array();
    for (const CaptureFinding& f : findings) {
        nlohmann::json data = nlohmann::json::object();
        for (const auto& [k, v] : f.data)
            data[k] = v;
        list.push_back({{"kind", f.kind},
                        {"severity", severityName(f.severity)},
                        {"devices", f.devices},
                        {"message", f.message},
                        {"fix", f.fix},
                        {"data", std::move(data)}});
    }
    CommandOutput out;
    out.json = {{"file", trace.snapshot.path},
                {"format", trace.snapshot.format},
                {"warnings", warnings},
                {"findings", std::move(list)}};
    std::ostringstream os;
    os << trace.snapshot.path << " (" << trace.snapshot.format << "): ";
    if (findings.empty()) {
        os << "nothing missing\n";
    } else {
        os << warnings << " warning" << (warnings == 1 ? "" : "s") << ", " << findings.size() - warnings << " note"
           << (findings.size() - warnings == 1 ? "" : "s") << "\n";
        for (const CaptureFinding& f : findings)
            os << "\n"
               << severityName(f.severity) << " " << f.kind << ": " << f.message << "\n  fix: " << f.fix << "\n";
    }
    out.text = os.str();
    return out;
}

int DoctorCommand::run()
{
    return runAndEmit([&] { return doctorOutput(*loadTrace(m_file)); }, m_json);
}

} // namespace headroom::cli
