"""Small models for recording training steps on the CPU (torch.nn only, random weights).

Families, each with a builder that takes the lever values and returns
``(model, make_batch, loss_fn)``:

  decoder   GPT-style decoder, eager attention (explicit q @ k^T, mask, softmax, @ v; no SDPA)
  encoder   BERT-like encoder (post-LayerNorm, bidirectional attention, MLM head)
  convnet   ResNet-like convolutional net (basic blocks, BatchNorm); ``seq`` is the image size
  lstm      LSTM language model (one nn.LSTM per layer)
  llama, gpt2fused, encdec, vit, moe
            defined in cpu_models_more.py (Llama, Hugging Face GPT-2, BART-like
            encoder-decoder, ViT with ``seq`` = patch tokens, mixture of experts)
  decoder_infer
            the decoder's model run for inference: ``run_point`` calls ``infer`` (forward
            under torch.no_grad(), model.eval(), no loss, backward or optimizer) instead of
            ``train``

``make_batch()`` returns ``(inputs, targets)`` for the builder's micro-batch and sequence;
``loss_fn(output, targets)`` returns the scalar loss. ``checkpoint='full'`` recomputes every
block in backward (``torch.utils.checkpoint.checkpoint`` per block); ``precision='bf16'``
converts the model with ``model.to(torch.bfloat16)``; ``'amp-bf16'`` leaves the model in fp32
(``train`` runs forward and loss under ``torch.autocast('cpu', dtype=torch.bfloat16)``, or with
``autocast='cuda'`` under CUDA's autocast lists, emulated by python/headroom_autocast.py).

``train(...)`` runs the training steps with the phase markers of a capture, and
``run_point(...)`` builds, trains and records one point of the measured matrix.
"""

import contextlib
import math

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.checkpoint import checkpoint as _checkpoint

FAMILIES = ("decoder", "encoder", "convnet", "lstm", "llama", "gpt2fused", "encdec", "vit", "moe",
            "decoder_infer", "llama_infer")
# the sequence length at "seq x1": the image side for convnet, the number of patch tokens for
# vit. llama's 64 makes query heads * seq = dim (2 * 64 = 128): its b*h*s^2 score tensors have
# the byte size of a b*s*d activation (see cpu_models_more.py for the others' ratios)
BASE_SEQ = {"decoder": 128, "encoder": 128, "convnet": 32, "lstm": 64, "llama": 64,
            "gpt2fused": 128, "encdec": 64, "vit": 64, "moe": 128, "decoder_infer": 128,
            "llama_infer": 64}
# families recorded forward-only (infer): no backward, no optimizer
INFERENCE = ("decoder_infer", "llama_infer")


def _ckpt(fn, *args):
    try:
        return _checkpoint(fn, *args, use_reentrant=True)
    except TypeError:  # very old signature without use_reentrant
        return _checkpoint(fn, *args)


class _Blocks(nn.Module):
    """Runs blocks in order, each under activation checkpointing when asked."""

    def __init__(self, blocks, checkpoint):
        super().__init__()
        self.blocks = nn.ModuleList(blocks)
        self.checkpoint = checkpoint

    def forward(self, x):
        for b in self.blocks:
            if self.checkpoint == "full" and torch.is_grad_enabled():
                x = _ckpt(b, x)
            else:
                x = b(x)
        return x


# ---------------------------------------------------------------------- attention blocks
class EagerSelfAttention(nn.Module):
    def __init__(self, dim, heads, causal, dropout=0.1):
        super().__init__()
        self.heads = heads
        self.causal = causal
        self.qkv = nn.Linear(dim, 3 * dim)
        self.proj = nn.Linear(dim, dim)
        self.attn_drop = nn.Dropout(dropout)
        self.resid_drop = nn.Dropout(dropout)

    def forward(self, x):
        b, t, c = x.shape
        h = self.heads
        q, k, v = self.qkv(x).split(c, dim=2)
        q = q.view(b, t, h, c // h).transpose(1, 2)
        k = k.view(b, t, h, c // h).transpose(1, 2)
        v = v.view(b, t, h, c // h).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(c // h))
        if self.causal:
            mask = torch.ones(t, t, dtype=torch.bool, device=x.device).tril()
            att = att.masked_fill(~mask, float("-inf"))
        att = F.softmax(att, dim=-1)
        att = self.attn_drop(att)
        y = att @ v
        y = y.transpose(1, 2).contiguous().view(b, t, c)
        return self.resid_drop(self.proj(y))


class MLP(nn.Module):
    def __init__(self, dim, dropout=0.1):
        super().__init__()
        self.fc = nn.Linear(dim, 4 * dim)
        self.proj = nn.Linear(4 * dim, dim)
        self.drop = nn.Dropout(dropout)

    def forward(self, x):
        return self.drop(self.proj(F.gelu(self.fc(x))))


class DecoderBlock(nn.Module):  # pre-LN, GPT-2 style
    def __init__(self, dim, heads):
        super().__init__()
        self.ln1 = nn.LayerNorm(dim)
        self.attn = EagerSelfAttention(dim, heads, causal=True)
        self.ln2 = nn.LayerNorm(dim)
        self.mlp = MLP(dim)

    def forward(self, x):
        x = x + self.attn(self.ln1(x))
        return x + self.mlp(self.ln2(x))


class EncoderBlock(nn.Module):  # post-LN, BERT style
    def __init__(self, dim, heads):
        super().__init__()
        self.attn = EagerSelfAttention(dim, heads, causal=False)
        self.ln1 = nn.LayerNorm(dim)
        self.mlp = MLP(dim)
        self.ln2 = nn.LayerNorm(dim)

    def forward(self, x):
        x = self.ln1(x + self.attn(x))
        return self.ln2(x + self.mlp(x))


class GPT(nn.Module):
    def __init__(self, vocab, dim, heads, layers, max_seq, checkpoint):
        super().__init__()
        self.tok = nn.Embedding(vocab, dim)
        self.pos = nn.Embedding(max_seq, dim)
        self.drop = nn.Dropout(0.1)
        self.blocks = _Blocks([DecoderBlock(dim, heads) for _ in range(layers)], checkpoint)
        self.ln_f = nn.LayerNorm(dim)
        self.head = nn.Linear(dim, vocab, bias=False)

    def forward(self, idx):
        t = idx.shape[1]
        pos = torch.arange(t, device=idx.device)
        x = self.drop(self.tok(idx) + self.pos(pos))
        x = self.blocks(x)
        return self.head(self.ln_f(x))


class BERT(nn.Module):
    def __init__(self, vocab, dim, heads, layers, max_seq, checkpoint):
        super().__init__()
        self.tok = nn.Embedding(vocab, dim)
        self.pos = nn.Embedding(max_seq, dim)
        self.typ = nn.Embedding(2, dim)
        self.ln = nn.LayerNorm(dim)
        self.drop = nn.Dropout(0.1)
        self.blocks = _Blocks([EncoderBlock(dim, heads) for _ in range(layers)], checkpoint)
        self.mlm_dense = nn.Linear(dim, dim)
        self.mlm_ln = nn.LayerNorm(dim)
        self.mlm_out = nn.Linear(dim, vocab)

    def forward(self, idx):
        t = idx.shape[1]
        pos = torch.arange(t, device=idx.device)
        typ = torch.zeros_like(idx)
        x = self.drop(self.ln(self.tok(idx) + self.pos(pos) + self.typ(typ)))
        x = self.blocks(x)
        h = F.gelu(self.mlm_dense(x))
        # CPU autocast in 1.13 does not run layer_norm in fp32 as CUDA autocast does: cast here
        return self.mlm_out(self.mlm_ln(h.to(self.mlm_ln.weight.dtype)))


# ---------------------------------------------------------------------- convnet
class BasicBlock(nn.Module):
    def __init__(self, cin, cout, stride):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.down = None
        if stride != 1 or cin != cout:
            self.down = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False),
                                      nn.BatchNorm2d(cout))

    def forward(self, x):
        y = F.relu(self.bn1(self.conv1(x)))
        y = self.bn2(self.conv2(y))
        return F.relu(y + (x if self.down is None else self.down(x)))


class ResNet(nn.Module):
    def __init__(self, widths, classes, checkpoint):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, widths[0], 3, 1, 1, bias=False),
                                  nn.BatchNorm2d(widths[0]), nn.ReLU())
        blocks, cin = [], widths[0]
        for i, w in enumerate(widths):
            blocks.append(BasicBlock(cin, w, 1 if i == 0 else 2))
            blocks.append(BasicBlock(w, w, 1))
            cin = w
        self.blocks = _Blocks(blocks, checkpoint)
        self.fc = nn.Linear(cin, classes)

    def forward(self, x):
        x = self.blocks(self.stem(x))
        return self.fc(torch.flatten(F.adaptive_avg_pool2d(x, 1), 1))


# ---------------------------------------------------------------------- LSTM
class _LSTMLayer(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.lstm = nn.LSTM(dim, dim, batch_first=True)

    def forward(self, x):
        return self.lstm(x)[0]


class LSTMLM(nn.Module):
    def __init__(self, vocab, dim, layers, checkpoint):
        super().__init__()
        self.emb = nn.Embedding(vocab, dim)
        self.blocks = _Blocks([_LSTMLayer(dim) for _ in range(layers)], checkpoint)
        self.head = nn.Linear(dim, vocab)

    def forward(self, idx):
        return self.head(self.blocks(self.emb(idx)))


# ---------------------------------------------------------------------- builders
def _lm_loss(logits, targets):
    return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1))


def _tokens(vocab, micro_batch, seq, seed):
    g = torch.Generator().manual_seed(seed)

    def make_batch():
        x = torch.randint(0, vocab, (micro_batch, seq), generator=g)
        y = torch.randint(0, vocab, (micro_batch, seq), generator=g)
        return x, y
    return make_batch


def _finish(model, precision):
    if precision == "bf16":
        model.to(torch.bfloat16)
    return model


def build_decoder(micro_batch=2, seq=128, precision="fp32", checkpoint="none", seed=0,
                  vocab=256, dim=64, heads=4, layers=2):
    torch.manual_seed(seed)
    model = _finish(GPT(vocab, dim, heads, layers, max(seq, 128), checkpoint), precision)
    return model, _tokens(vocab, micro_batch, seq, seed + 1), _lm_loss


def build_encoder(micro_batch=2, seq=128, precision="fp32", checkpoint="none", seed=0,
                  vocab=256, dim=64, heads=4, layers=2):
    torch.manual_seed(seed)
    model = _finish(BERT(vocab, dim, heads, layers, max(seq, 128), checkpoint), precision)
    return model, _tokens(vocab, micro_batch, seq, seed + 1), _lm_loss


def build_convnet(micro_batch=2, seq=32, precision="fp32", checkpoint="none", seed=0,
                  widths=(8, 16, 32), classes=10):
    torch.manual_seed(seed)
    model = _finish(ResNet(widths, classes, checkpoint), precision)
    dtype = torch.bfloat16 if precision == "bf16" else torch.float32
    g = torch.Generator().manual_seed(seed + 1)

    def make_batch():
        x = torch.randn(micro_batch, 3, seq, seq, generator=g).to(dtype)
        y = torch.randint(0, classes, (micro_batch,), generator=g)
        return x, y
    return model, make_batch, F.cross_entropy


def build_lstm(micro_batch=2, seq=64, precision="fp32", checkpoint="none", seed=0,
               vocab=128, dim=32, layers=2):
    torch.manual_seed(seed)
    model = _finish(LSTMLM(vocab, dim, layers, checkpoint), precision)
    return model, _tokens(vocab, micro_batch, seq, seed + 1), _lm_loss


BUILDERS = {"decoder": build_decoder, "encoder": build_encoder,
            "convnet": build_convnet, "lstm": build_lstm, "decoder_infer": build_decoder}
import cpu_models_more  # noqa: E402  (it reads the helpers above at call time only)
BUILDERS.update(cpu_models_more.BUILDERS)
BUILDERS["llama_infer"] = BUILDERS["llama"]


def build(family, micro_batch=2, seq=None, precision="fp32", checkpoint="none", seed=0):
    """``(model, make_batch, loss_fn)`` for one family; ``seq`` defaults to BASE_SEQ."""
    if family not in BUILDERS:
        raise ValueError("family must be one of %s, not %r" % (FAMILIES, family))
    return BUILDERS[family](micro_batch=micro_batch, seq=seq or BASE_SEQ[family],
                            precision=precision, checkpoint=checkpoint, seed=seed)


def make_optimizer(name, params):
    params = list(params)
    if name == "sgd":
        return torch.optim.SGD(params, lr=1e-3)
    if name == "sgd-momentum":
        return torch.optim.SGD(params, lr=1e-3, momentum=0.9)
    if name == "adam":
        return torch.optim.Adam(params, lr=1e-3)
    if name == "adamw":
        return torch.optim.AdamW(params, lr=1e-3)
    raise ValueError("optimizer must be sgd, sgd-momentum, adam or adamw, not %r" % (name,))


class _NoMarks(object):
    def phase(self, name):
        return contextlib.nullcontext()

    def iteration(self):
        return contextlib.nullcontext()

    def inputs(self, *tensors):
        return tensors[0] if len(tensors) == 1 else tensors


def autocast_context(precision, autocast="cpu"):
    """The autocast region of ``precision``: none unless 'amp-bf16'; the CPU's own autocast, or
    with ``autocast='cuda'`` CUDA's lists on the CPU (headroom_autocast.cuda_autocast)."""
    if precision != "amp-bf16":
        return contextlib.nullcontext()
    if autocast == "cuda":
        from headroom_autocast import cuda_autocast
        return cuda_autocast(torch.bfloat16)
    if autocast != "cpu":
        raise ValueError("autocast must be 'cpu' or 'cuda', not %r" % (autocast,))
    return torch.autocast("cpu", dtype=torch.bfloat16)


def train(model, optimizer, make_batch, loss_fn, precision="fp32", accum=1, iterations=1,
          cap=None, set_to_none=True, autocast="cpu"):
    """``iterations`` optimizer steps of ``accum`` forward/backward passes each, with the
    phase and iteration markers of ``cap`` (a headroom_cpu capture) when given."""
    cap = cap or _NoMarks()
    model.train()
    for _ in range(iterations):
        with cap.iteration():
            for _ in range(accum):
                x, y = make_batch()
                if hasattr(cap, "inputs"):  # the batch is "input" in headroom_truth
                    x, y = cap.inputs(x, y)
                with autocast_context(precision, autocast):
                    with cap.phase("forward"):
                        out = model(x)
                    with cap.phase("loss"):
                        loss = loss_fn(out, y)
                        if accum > 1:
                            loss = loss / accum
                del out
                with cap.phase("backward"):
                    loss.backward()
                del loss, x, y
            with cap.phase("optimizer"):
                optimizer.step()
                optimizer.zero_grad(set_to_none=set_to_none)


def infer(model, make_batch, precision="fp32", iterations=1, cap=None, autocast="cpu"):
    """``iterations`` forward passes under ``torch.no_grad()`` (``model.eval()``: no dropout),
    each in an iteration marker with a forward phase; no loss, backward or optimizer, so the
    peak is the forward's temporaries on top of the weights."""
    cap = cap or _NoMarks()
    model.eval()
    for _ in range(iterations):
        with cap.iteration():
            x, y = make_batch()
            x, y = cap.inputs(x, y)
            with torch.no_grad(), autocast_context(precision, autocast):
                with cap.phase("forward"):
                    out = model(x)
            del out, x, y


def run_point(path, family, micro_batch=2, seq_mult=1, precision="fp32", optimizer="adamw",
              checkpoint="none", accum=1, iterations=1, prebuilt=False, warmup=None, seed=0,
              **more):
    """Record one matrix point into ``path``; returns the capture (peaks set).

    ``prebuilt=False`` builds model, optimizer and batches inside the captured block (every
    tensor is seen being allocated); ``prebuilt=True`` builds the model and optimizer before
    it, takes ``warmup`` steps (default 1 when prebuilt: the optimizer state exists), and
    passes them as ``model=``/``optimizer=`` (recorded as alive before the trace).

    A family of INFERENCE runs ``infer`` instead of ``train``: no optimizer is made (the file
    says ``optimizer: 'none'``, ``mode: 'inference'``); accum and checkpoint do not apply."""
    import headroom_cpu
    inference = family in INFERENCE
    if inference:
        if accum != 1 or checkpoint != "none":
            raise ValueError("%s runs forward only (no backward): accum and checkpoint do not "
                             "apply" % family)
        optimizer = "none"
        more.setdefault("mode", "inference")
    seq = BASE_SEQ[family] * seq_mult
    levers = dict(micro_batch=micro_batch, seq=seq, precision=precision, checkpoint=checkpoint,
                  accum=accum, devices=1, iterations=iterations)
    kw = dict(levers, optimizer=optimizer, model=family, family=family, seq_mult=seq_mult,
              prebuilt=prebuilt, **more)

    autocast = more.get("autocast", "cpu")

    def step(model, opt, make_batch, loss_fn, n, cap=None):
        if inference:
            infer(model, make_batch, precision, n, cap, autocast=autocast)
        else:
            train(model, opt, make_batch, loss_fn, precision, accum, n, cap, autocast=autocast)

    def optim(model):
        return None if inference else make_optimizer(optimizer, model.parameters())
    if prebuilt:
        model, make_batch, loss_fn = build(family, micro_batch, seq, precision, checkpoint, seed)
        opt = optim(model)
        warmup = 1 if warmup is None else warmup
        if warmup:
            step(model, opt, make_batch, loss_fn, warmup)
        kw["model"], kw["optimizer"], kw["warmup_steps"] = model, opt or optimizer, warmup
        kw["model_name"] = family
        with headroom_cpu.capture(path, **kw) as cap:
            step(model, opt, make_batch, loss_fn, iterations, cap)
        return cap
    with headroom_cpu.capture(path, **kw) as cap:
        model, make_batch, loss_fn = build(family, micro_batch, seq, precision, checkpoint, seed)
        opt = optim(model)
        step(model, opt, make_batch, loss_fn, iterations, cap)
        # model and optimizer stay alive past the end of the trace, as in a snapshot taken
        # during training: parameters and optimizer state are live at the end
    return cap
