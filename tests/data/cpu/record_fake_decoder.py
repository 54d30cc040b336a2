#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# Writes fake_decoder.pickle into the current directory (run with /usr/bin/python3: Debian's
# PyTorch 1.13 for the CPU); see README.md here.
#
# The decoder point of tools/cpu_matrix.py (micro-batch 2, sequence 128, fp32, AdamW, two
# iterations) recorded in fake mode (headroom_cpu.capture(..., fake=True)): nothing allocated,
# the same allocations as the real recording (python/tests/test_headroom_fake.py), and
# headroom_config's "fake": true, which `headroom-cli doctor` reports, and its target device
# (an 80 GiB H100: target_capacity_bytes), the capacity Headroom judges it against.
import os, sys
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "python"))
import torch, cpu_models
torch.set_num_threads(1)

cpu_models.run_point("fake_decoder.pickle", "decoder", iterations=2, fake=True, target_device="h100-80gb")
