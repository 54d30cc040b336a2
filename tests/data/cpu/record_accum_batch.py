#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# Writes accum_mb2.pickle and accum_mb4.pickle into the current directory (run with
# /usr/bin/python3: Debian's PyTorch 1.13 for the CPU); see README.md here.
#
# The convnet of python/cpu_models.py with four micro-steps per optimizer step, at micro-batch
# 2 and 4, recorded without shapes (as a GPU snapshot has none) and without the recorder's
# truth. From the second micro-step on, the backward makes each weight's gradient as a
# temporary and adds it into the .grad kept from the first: as large as the weight at any
# batch, though its size (32 x 32 x 3 x 3 x 4 bytes) is a multiple of b*s at micro-batch 2.
import os, sys
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "python"))
import torch, cpu_models
torch.set_num_threads(1)

for name, mb in (("accum_mb2", 2), ("accum_mb4", 4)):
    cpu_models.run_point(name + ".pickle", "convnet", micro_batch=mb, accum=4, iterations=2,
                         shapes=False, truth=False)
    print("wrote", name + ".pickle", os.path.getsize(name + ".pickle"), "bytes")
