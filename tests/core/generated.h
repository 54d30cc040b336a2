// SPDX-License-Identifier: MIT
// Generated training runs for the what-if tests (tools/gen_snapshot.py): one model, written
// once per build at a micro-batch and sequence length.
#pragma once

#include <catch2/catch.hpp>

#include <cstdlib>
#include <filesystem>
#include <string>

namespace headroom::test {

inline std::string generatedRun(int microBatch, int seq = 1024)
{
    const std::string dir = HEADROOM_GEN_DIR;
    const std::string path = dir + "/run_b" + std::to_string(microBatch) + "_s" + std::to_string(seq) + ".pickle";
    if (!std::filesystem::exists(path)) {
        std::filesystem::create_directories(dir);
        const std::string cmd = "python3 " HEADROOM_SOURCE_DIR "/tools/gen_snapshot.py --out " + path +
                                " --layers 4 --hidden 1024 --heads 16 --vocab 32000 --steps 3 --seq-jitter 0"
                                " --micro-batch " + std::to_string(microBatch) + " --seq-len " + std::to_string(seq) +
                                " > /dev/null";
        REQUIRE(std::system(cmd.c_str()) == 0);
    }
    return path;
}

} // namespace headroom::test
