#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# Writes budget_short_steps.pickle and budget_worst_step.pickle into the current directory (run
# with /usr/bin/python3: Debian's PyTorch 1.13 for the CPU); see README.md here.
#
# Two runs of one configuration for the standing budget's policy (docs/budget.md): a small
# decoder at micro-batch 2 whose data holds sequences of up to 64 tokens, so its worst-case
# step is 2 x 64 = 128 tokens. The first run only met short batches (two steps of 2 x 32);
# the second met the worst case in its second step (2 x 32, then 2 x 64). Each file's
# headroom_config carries the step sizes as the GPU recorder writes them (step_tokens) and the
# declared worst case (worst_case_tokens); the configuration (micro_batch, seq = the data's
# longest sequence) is the same, so `budget status` groups them as one.
import os, sys
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "python"))
import torch, cpu_models, headroom_cpu
torch.set_num_threads(1)

MICRO_BATCH, LONGEST = 2, 64


def run(path, seqs):
    sizes = ",".join(str(MICRO_BATCH * s) for s in seqs)
    config = dict(micro_batch=MICRO_BATCH, seq=LONGEST, precision="fp32", checkpoint="none", accum=1,
                  devices=1, iterations=len(seqs), optimizer="adamw", model="decoder_budget",
                  family="decoder", step_tokens=sizes, worst_case_tokens=MICRO_BATCH * LONGEST)
    with headroom_cpu.capture(path, **config) as cap:
        model, _, loss_fn = cpu_models.build_decoder(MICRO_BATCH, LONGEST)
        opt = cpu_models.make_optimizer("adamw", model.parameters())
        for i, s in enumerate(seqs):
            make_batch = cpu_models._tokens(256, MICRO_BATCH, s, seed=10 + i)
            cpu_models.train(model, opt, make_batch, loss_fn, iterations=1, cap=cap)


run("budget_short_steps.pickle", [32, 32])
run("budget_worst_step.pickle", [32, 64])
