"""More model families for recording training steps on the CPU (see cpu_models.py).

Each mirrors the memory behaviour of a real architecture at a small size (random weights, no
downloads), with its attention written out by the user (no fused SDPA):

  llama      pre-RMSNorm decoder, rotary embeddings, grouped-query attention (2 query heads
             sharing 1 kv head, kv repeated), SwiGLU MLP; attention by the module-level
             ``scaled_dot_product_attention`` (torch.einsum) and ``softmax`` below, as in
             Stanford CS336's assignment 1
  gpt2fused  GPT-2 as Hugging Face writes it: one fused c_attn (Conv1D, 3*d) split into q, k,
             v, q @ k^T, causal mask buffer, F.softmax, attention dropout, gelu_new, tied
             embeddings
  encdec     BART-like encoder-decoder: encoder self-attention, decoder causal self-attention
             and cross-attention over the encoder output, post-LayerNorm, shared embeddings;
             ``seq`` is both the source and the target length, the loss is the target's LM
             cross-entropy
  vit        ViT: conv patch embedding (patch 4), CLS token, learned positions, pre-LN blocks
             with eager attention, classification loss. ``seq`` is the number of patch tokens
             (the CLS token comes on top), not the image side: the image is
             (4*rows) x (4*cols) pixels with rows*cols = seq (64 = 8x8: 32x32 pixels,
             128 = 8x16: 32x64, 256 = 16x16: 64x64), so activations and scores follow seq as
             a decoder's do
  moe        decoder whose MLP is a mixture of 4 experts with top-2 softmax routing
             (Mixtral-style: tokens gathered per expert with index_select, summed back with
             index_add_), eager attention

The builders have cpu_models' signature and return ``(model, make_batch, loss_fn)``; they
are registered in cpu_models.BUILDERS. cpu_models is imported at call time only, so either
module may be imported first.
"""

import math

import torch
import torch.nn as nn
import torch.nn.functional as F


def _base():
    import cpu_models
    return cpu_models


# ---------------------------------------------------------------------- llama
def softmax(x, dim):
    """Numerically stable softmax: subtract the max, exp, divide by the sum."""
    x_max = torch.max(x, dim=dim, keepdim=True).values
    e = torch.exp(x - x_max)
    return e / torch.sum(e, dim=dim, keepdim=True)


def scaled_dot_product_attention(q, k, v, mask):
    """softmax(q k^T / sqrt(d_k)) v with einsum; ``mask`` (bool, True = attend) or None."""
    d_k = q.shape[-1]
    scores = torch.einsum("...qd,...kd->...qk", q, k) / math.sqrt(d_k)
    if mask is not None:
        scores = torch.where(mask, scores, float("-inf"))
    return torch.einsum("...qk,...kd->...qd", softmax(scores, dim=-1), v)


class RMSNorm(nn.Module):  # Llama's: computed in fp32, scaled in the input dtype
    def __init__(self, dim, eps=1e-5):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(dim))
        self.eps = eps

    def forward(self, x):
        dtype = x.dtype
        h = x.to(torch.float32)
        h = h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + self.eps)
        return self.weight * h.to(dtype)


class Rotary(nn.Module):
    """cos/sin tables (buffers) of the rotary embedding, shared by every layer."""

    def __init__(self, head_dim, max_seq, theta=10000.0):
        super().__init__()
        inv = 1.0 / (theta ** (torch.arange(0, head_dim, 2).float() / head_dim))
        f = torch.outer(torch.arange(max_seq).float(), inv)
        emb = torch.cat((f, f), dim=-1)
        self.register_buffer("cos", emb.cos(), persistent=False)
        self.register_buffer("sin", emb.sin(), persistent=False)

    def forward(self, t):
        return self.cos[:t], self.sin[:t]


def _rotate_half(x):
    h = x.shape[-1] // 2
    return torch.cat((-x[..., h:], x[..., :h]), dim=-1)


def _apply_rope(x, cos, sin):
    return x * cos.to(x.dtype) + _rotate_half(x) * sin.to(x.dtype)


def _repeat_kv(x, n):  # (b, kvh, s, hd) -> (b, kvh*n, s, hd), copied (Hugging Face's repeat_kv)
    if n == 1:
        return x
    b, kvh, s, hd = x.shape
    return x[:, :, None].expand(b, kvh, n, s, hd).reshape(b, kvh * n, s, hd)


class LlamaAttention(nn.Module):
    def __init__(self, dim, heads, kv_heads, rope):
        super().__init__()
        self.heads, self.kv_heads, self.hd = heads, kv_heads, dim // heads
        self.q_proj = nn.Linear(dim, heads * self.hd, bias=False)
        self.k_proj = nn.Linear(dim, kv_heads * self.hd, bias=False)
        self.v_proj = nn.Linear(dim, kv_heads * self.hd, bias=False)
        self.o_proj = nn.Linear(heads * self.hd, dim, bias=False)
        self.rope = rope

    def forward(self, x):
        b, t, _ = x.shape
        q = self.q_proj(x).view(b, t, self.heads, self.hd).transpose(1, 2)
        k = self.k_proj(x).view(b, t, self.kv_heads, self.hd).transpose(1, 2)
        v = self.v_proj(x).view(b, t, self.kv_heads, self.hd).transpose(1, 2)
        cos, sin = self.rope(t)
        q, k = _apply_rope(q, cos, sin), _apply_rope(k, cos, sin)
        n = self.heads // self.kv_heads
        k, v = _repeat_kv(k, n), _repeat_kv(v, n)
        mask = torch.ones(t, t, dtype=torch.bool, device=x.device).tril()
        y = scaled_dot_product_attention(q, k, v, mask)
        return self.o_proj(y.transpose(1, 2).reshape(b, t, self.heads * self.hd))


class SwiGLU(nn.Module):
    def __init__(self, dim, hidden):
        super().__init__()
        self.gate_proj = nn.Linear(dim, hidden, bias=False)
        self.up_proj = nn.Linear(dim, hidden, bias=False)
        self.down_proj = nn.Linear(hidden, dim, bias=False)

    def forward(self, x):
        return self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))


class LlamaBlock(nn.Module):
    def __init__(self, dim, heads, kv_heads, hidden, rope):
        super().__init__()
        self.input_layernorm = RMSNorm(dim)
        self.self_attn = LlamaAttention(dim, heads, kv_heads, rope)
        self.post_attention_layernorm = RMSNorm(dim)
        self.mlp = SwiGLU(dim, hidden)

    def forward(self, x):
        x = x + self.self_attn(self.input_layernorm(x))
        return x + self.mlp(self.post_attention_layernorm(x))


class Llama(nn.Module):
    def __init__(self, vocab, dim, heads, kv_heads, hidden, layers, max_seq, checkpoint):
        super().__init__()
        self.embed_tokens = nn.Embedding(vocab, dim)
        self.rope = Rotary(dim // heads, max_seq)
        blocks = [LlamaBlock(dim, heads, kv_heads, hidden, self.rope) for _ in range(layers)]
        self.blocks = _base()._Blocks(blocks, checkpoint)
        self.norm = RMSNorm(dim)
        self.lm_head = nn.Linear(dim, vocab, bias=False)  # untied, as in Llama

    def forward(self, idx):
        return self.lm_head(self.norm(self.blocks(self.embed_tokens(idx))))


# ---------------------------------------------------------------------- gpt2fused
class Conv1D(nn.Module):  # Hugging Face's GPT-2 linear: weight (in, out), addmm
    def __init__(self, nf, nx):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(nx, nf) * 0.02)
        self.bias = nn.Parameter(torch.zeros(nf))

    def forward(self, x):
        size = x.size()[:-1] + (self.weight.shape[1],)
        return torch.addmm(self.bias, x.view(-1, x.size(-1)), self.weight).view(size)


def gelu_new(x):  # GPT-2's tanh GELU, written out as Hugging Face does (NewGELUActivation)
    inner = math.sqrt(2.0 / math.pi) * (x + 0.044715 * torch.pow(x, 3.0))
    return 0.5 * x * (1.0 + torch.tanh(inner))


class GPT2Attention(nn.Module):
    def __init__(self, dim, heads, n_positions, dropout=0.1):
        super().__init__()
        self.heads, self.dim = heads, dim
        self.c_attn = Conv1D(3 * dim, dim)
        self.c_proj = Conv1D(dim, dim)
        self.attn_dropout = nn.Dropout(dropout)
        self.resid_dropout = nn.Dropout(dropout)
        # one causal mask buffer per layer, n_positions^2 bools (as in transformers' GPT-2)
        mask = torch.tril(torch.ones(n_positions, n_positions, dtype=torch.bool))
        self.register_buffer("bias", mask.view(1, 1, n_positions, n_positions), persistent=False)

    def _split(self, x):
        b, t, _ = x.shape
        return x.view(b, t, self.heads, self.dim // self.heads).permute(0, 2, 1, 3)

    def forward(self, x):
        b, t, c = x.shape
        q, k, v = self.c_attn(x).split(self.dim, dim=2)
        q, k, v = self._split(q), self._split(k), self._split(v)
        w = torch.matmul(q, k.transpose(-1, -2))
        w = w / torch.full([], v.size(-1) ** 0.5, dtype=w.dtype, device=w.device)
        mask_value = torch.full([], torch.finfo(w.dtype).min, dtype=w.dtype, device=w.device)
        w = torch.where(self.bias[:, :, :t, :t], w, mask_value)
        w = F.softmax(w, dim=-1).type(v.dtype)
        w = self.attn_dropout(w)
        y = torch.matmul(w, v).permute(0, 2, 1, 3).contiguous().view(b, t, c)
        return self.resid_dropout(self.c_proj(y))


class GPT2MLP(nn.Module):
    def __init__(self, dim, dropout=0.1):
        super().__init__()
        self.c_fc = Conv1D(4 * dim, dim)
        self.c_proj = Conv1D(dim, 4 * dim)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x):
        return self.dropout(self.c_proj(gelu_new(self.c_fc(x))))


class GPT2Block(nn.Module):
    def __init__(self, dim, heads, n_positions):
        super().__init__()
        self.ln_1 = nn.LayerNorm(dim)
        self.attn = GPT2Attention(dim, heads, n_positions)
        self.ln_2 = nn.LayerNorm(dim)
        self.mlp = GPT2MLP(dim)

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


class GPT2(nn.Module):
    def __init__(self, vocab, dim, heads, layers, n_positions, checkpoint):
        super().__init__()
        self.wte = nn.Embedding(vocab, dim)
        self.wpe = nn.Embedding(n_positions, dim)
        self.drop = nn.Dropout(0.1)
        self.h = _base()._Blocks([GPT2Block(dim, heads, n_positions) for _ in range(layers)],
                                 checkpoint)
        self.ln_f = nn.LayerNorm(dim)
        self.lm_head = nn.Linear(dim, vocab, bias=False)
        self.lm_head.weight = self.wte.weight  # tied

    def forward(self, idx):
        pos = torch.arange(idx.shape[1], device=idx.device)
        x = self.drop(self.wte(idx) + self.wpe(pos))
        return self.lm_head(self.ln_f(self.h(x)))


# ---------------------------------------------------------------------- encdec
class BartAttention(nn.Module):
    """Eager attention as transformers' BART writes it: q scaled before q @ k^T, heads
    folded into the batch for bmm, an additive float mask."""

    def __init__(self, dim, heads):
        super().__init__()
        self.heads, self.hd = heads, dim // heads
        self.scaling = self.hd ** -0.5
        self.q_proj = nn.Linear(dim, dim)
        self.k_proj = nn.Linear(dim, dim)
        self.v_proj = nn.Linear(dim, dim)
        self.out_proj = nn.Linear(dim, dim)

    def _shape(self, x, b):
        return x.view(b, -1, self.heads, self.hd).transpose(1, 2).contiguous() \
                .view(b * self.heads, -1, self.hd)

    def forward(self, x, kv=None, causal=False):
        b, t, c = x.shape
        kv = x if kv is None else kv
        s = kv.shape[1]
        q = self._shape(self.q_proj(x) * self.scaling, b)
        k, v = self._shape(self.k_proj(kv), b), self._shape(self.v_proj(kv), b)
        w = torch.bmm(q, k.transpose(1, 2))
        if causal:
            m = torch.full((t, s), torch.finfo(w.dtype).min, device=x.device)
            m = m.masked_fill(torch.ones(t, s, dtype=torch.bool).tril(), 0.0).to(w.dtype)
            w = (w.view(b, self.heads, t, s) + m[None, None].expand(b, 1, t, s)) \
                .view(b * self.heads, t, s)
        w = F.softmax(w, dim=-1)  # BART's attention_dropout is 0.0
        y = torch.bmm(w, v).view(b, self.heads, t, self.hd).transpose(1, 2).reshape(b, t, c)
        return self.out_proj(y)


class _FFN(nn.Module):
    def __init__(self, dim, dropout=0.1):
        super().__init__()
        self.fc1 = nn.Linear(dim, 4 * dim)
        self.fc2 = nn.Linear(4 * dim, dim)
        self.drop = nn.Dropout(dropout)

    def forward(self, x):
        return self.drop(self.fc2(F.gelu(self.fc1(x))))


class BartEncoderLayer(nn.Module):  # post-LN
    def __init__(self, dim, heads):
        super().__init__()
        self.self_attn = BartAttention(dim, heads)
        self.self_attn_layer_norm = nn.LayerNorm(dim)
        self.drop = nn.Dropout(0.1)
        self.ffn = _FFN(dim)
        self.final_layer_norm = nn.LayerNorm(dim)

    def forward(self, x):
        x = self.self_attn_layer_norm(x + self.drop(self.self_attn(x)))
        return self.final_layer_norm(x + self.ffn(x))


class BartDecoderLayer(nn.Module):  # post-LN, causal self-attention then cross-attention
    def __init__(self, dim, heads):
        super().__init__()
        self.self_attn = BartAttention(dim, heads)
        self.self_attn_layer_norm = nn.LayerNorm(dim)
        self.encoder_attn = BartAttention(dim, heads)
        self.encoder_attn_layer_norm = nn.LayerNorm(dim)
        self.drop = nn.Dropout(0.1)
        self.ffn = _FFN(dim)
        self.final_layer_norm = nn.LayerNorm(dim)

    def forward(self, x, mem):
        x = self.self_attn_layer_norm(x + self.drop(self.self_attn(x, causal=True)))
        x = self.encoder_attn_layer_norm(x + self.drop(self.encoder_attn(x, kv=mem)))
        return self.final_layer_norm(x + self.ffn(x))


class EncDec(nn.Module):
    def __init__(self, vocab, dim, heads, layers, n_positions, checkpoint):
        super().__init__()
        self.shared = nn.Embedding(vocab, dim)
        self.enc_pos = nn.Embedding(n_positions, dim)
        self.dec_pos = nn.Embedding(n_positions, dim)
        self.enc_ln = nn.LayerNorm(dim)
        self.dec_ln = nn.LayerNorm(dim)
        self.drop = nn.Dropout(0.1)
        self.encoder = _base()._Blocks([BartEncoderLayer(dim, heads) for _ in range(layers)],
                                       checkpoint)
        self.decoder = nn.ModuleList([BartDecoderLayer(dim, heads) for _ in range(layers)])
        self.checkpoint = checkpoint
        self.lm_head = nn.Linear(dim, vocab, bias=False)
        self.lm_head.weight = self.shared.weight  # tied to the shared embedding
        self.register_buffer("final_logits_bias", torch.zeros(1, vocab))

    def forward(self, x):
        """``x`` is (b, 2, seq): x[:, 0] the source, x[:, 1] the decoder input (the target
        shifted right)."""
        src, tgt = x[:, 0], x[:, 1]
        pos = torch.arange(src.shape[1], device=x.device)
        mem = self.encoder(self.drop(self.enc_ln(self.shared(src) + self.enc_pos(pos))))
        pos = torch.arange(tgt.shape[1], device=x.device)
        h = self.drop(self.dec_ln(self.shared(tgt) + self.dec_pos(pos)))
        for layer in self.decoder:
            if self.checkpoint == "full" and torch.is_grad_enabled():
                h = _base()._ckpt(layer, h, mem)
            else:
                h = layer(h, mem)
        return self.lm_head(h) + self.final_logits_bias


# ---------------------------------------------------------------------- vit
class ViTAttention(nn.Module):  # timm's Attention without fused_attn
    def __init__(self, dim, heads, attn_drop=0.0, proj_drop=0.1):
        super().__init__()
        self.heads, self.hd = heads, dim // heads
        self.scale = self.hd ** -0.5
        self.qkv = nn.Linear(dim, 3 * dim)
        self.attn_drop = nn.Dropout(attn_drop)
        self.proj = nn.Linear(dim, dim)
        self.proj_drop = nn.Dropout(proj_drop)

    def forward(self, x):
        b, n, c = x.shape
        qkv = self.qkv(x).reshape(b, n, 3, self.heads, self.hd).permute(2, 0, 3, 1, 4)
        q, k, v = qkv.unbind(0)
        attn = (q * self.scale) @ k.transpose(-2, -1)
        attn = self.attn_drop(attn.softmax(dim=-1))
        x = (attn @ v).transpose(1, 2).reshape(b, n, c)
        return self.proj_drop(self.proj(x))


class ViTBlock(nn.Module):
    def __init__(self, dim, heads, dropout=0.1):
        super().__init__()
        self.norm1 = nn.LayerNorm(dim)
        self.attn = ViTAttention(dim, heads)
        self.norm2 = nn.LayerNorm(dim)
        self.mlp = nn.Sequential(nn.Linear(dim, 4 * dim), nn.GELU(), nn.Dropout(dropout),
                                 nn.Linear(4 * dim, dim), nn.Dropout(dropout))

    def forward(self, x):
        x = x + self.attn(self.norm1(x))
        return x + self.mlp(self.norm2(x))


class ViT(nn.Module):
    def __init__(self, tokens, patch, dim, heads, layers, classes, checkpoint):
        super().__init__()
        self.patch_embed = nn.Conv2d(3, dim, patch, patch)
        self.cls_token = nn.Parameter(torch.zeros(1, 1, dim))
        # built for this point's image size, as timm's ViT is for its img_size
        self.pos_embed = nn.Parameter(torch.randn(1, tokens + 1, dim) * 0.02)
        self.pos_drop = nn.Dropout(0.1)
        self.blocks = _base()._Blocks([ViTBlock(dim, heads) for _ in range(layers)], checkpoint)
        self.norm = nn.LayerNorm(dim)
        self.head = nn.Linear(dim, classes)

    def forward(self, img):
        x = self.patch_embed(img).flatten(2).transpose(1, 2)  # (b, tokens, dim)
        x = torch.cat((self.cls_token.expand(x.shape[0], -1, -1), x), dim=1)
        x = self.blocks(self.pos_drop(x + self.pos_embed))
        return self.head(self.norm(x)[:, 0])


def vit_grid(tokens):
    """(rows, cols) of patches for ``tokens`` patches: rows the largest divisor <= sqrt."""
    rows = int(math.isqrt(tokens))
    while tokens % rows:
        rows -= 1
    return rows, tokens // rows


# ---------------------------------------------------------------------- moe
class MoE(nn.Module):
    """Top-k softmax routing over ``experts`` GELU MLPs, as Mixtral's sparse block routes."""

    def __init__(self, dim, experts=4, top_k=2, dropout=0.1):
        super().__init__()
        self.top_k, self.n = top_k, experts
        self.gate = nn.Linear(dim, experts, bias=False)
        self.experts = nn.ModuleList([_base().MLP(dim, dropout) for _ in range(experts)])

    def forward(self, x):
        b, t, d = x.shape
        h = x.reshape(-1, d)
        probs = F.softmax(self.gate(h), dim=1, dtype=torch.float)
        weights, chosen = torch.topk(probs, self.top_k, dim=-1)
        weights = (weights / weights.sum(dim=-1, keepdim=True)).to(h.dtype)
        out = torch.zeros((b * t, d), dtype=h.dtype, device=h.device)
        mask = F.one_hot(chosen, num_classes=self.n).permute(2, 1, 0)  # (experts, k, tokens)
        for e, expert in enumerate(self.experts):
            slot, tok = torch.where(mask[e])
            if tok.numel() == 0:
                continue
            y = expert(h.index_select(0, tok)) * weights[tok, slot, None]
            out.index_add_(0, tok, y.to(h.dtype))
        return out.view(b, t, d)


class MoEBlock(nn.Module):
    def __init__(self, dim, heads, experts, top_k):
        super().__init__()
        self.ln1 = nn.LayerNorm(dim)
        self.attn = _base().EagerSelfAttention(dim, heads, causal=True)
        self.ln2 = nn.LayerNorm(dim)
        self.moe = MoE(dim, experts, top_k)

    def forward(self, x):
        x = x + self.attn(self.ln1(x))
        return x + self.moe(self.ln2(x))


class MoEGPT(nn.Module):
    def __init__(self, vocab, dim, heads, layers, max_seq, experts, top_k, checkpoint):
        super().__init__()
        self.tok = nn.Embedding(vocab, dim)
        self.pos = nn.Embedding(max_seq, dim)
        self.drop = nn.Dropout(0.1)
        blocks = [MoEBlock(dim, heads, experts, top_k) for _ in range(layers)]
        self.blocks = _base()._Blocks(blocks, checkpoint)
        self.ln_f = nn.LayerNorm(dim)
        self.head = nn.Linear(dim, vocab, bias=False)

    def forward(self, idx):
        pos = torch.arange(idx.shape[1], device=idx.device)
        x = self.drop(self.tok(idx) + self.pos(pos))
        return self.head(self.ln_f(self.blocks(x)))


# ---------------------------------------------------------------------- builders
# Base sequences (cpu_models.BASE_SEQ) and what they give at micro-batch 2, fp32:
#   llama  seq 64: query heads * seq = 2 * 64 = 128 = dim, so one b*h*s^2 score tensor has
#          the byte size of one b*s*d activation (64 KiB): the family with that coincidence.
#          With h*s = d, the activations per parameter shrink as 1/h: with 4 query heads (and
#          seq 32) the peak of micro-batch 1 and 2 was AdamW's first step (params, gradients
#          and state), activations were not in it. With 2 the base point peaks in backward.
#   gpt2fused, moe  seq 128: a score tensor (512 KiB) is 8 activations (64 KiB)
#   encdec seq 64: a score tensor (128 KiB) is 4 activations, in 3 attentions per decoder layer
#   vit    seq 64 patch tokens + CLS: a score tensor (66 KiB) is 4 activations
def build_llama(micro_batch=2, seq=64, precision="fp32", checkpoint="none", seed=0,
                vocab=256, dim=128, heads=2, kv_heads=1, hidden=352, layers=2):
    torch.manual_seed(seed)
    model = Llama(vocab, dim, heads, kv_heads, hidden, layers, max(seq, 256), checkpoint)
    b = _base()
    return b._finish(model, precision), b._tokens(vocab, micro_batch, seq, seed + 1), b._lm_loss


def build_gpt2fused(micro_batch=2, seq=128, precision="fp32", checkpoint="none", seed=0,
                    vocab=256, dim=64, heads=4, layers=2, n_positions=512):
    torch.manual_seed(seed)
    model = GPT2(vocab, dim, heads, layers, max(seq, n_positions), checkpoint)
    b = _base()
    return b._finish(model, precision), b._tokens(vocab, micro_batch, seq, seed + 1), b._lm_loss


def build_encdec(micro_batch=2, seq=64, precision="fp32", checkpoint="none", seed=0,
                 vocab=256, dim=64, heads=4, layers=2, n_positions=256):
    torch.manual_seed(seed)
    b = _base()
    model = b._finish(EncDec(vocab, dim, heads, layers, max(seq, n_positions), checkpoint),
                      precision)
    g = torch.Generator().manual_seed(seed + 1)

    def make_batch():
        src = torch.randint(1, vocab, (micro_batch, seq), generator=g)
        y = torch.randint(1, vocab, (micro_batch, seq), generator=g)
        tgt_in = torch.cat((torch.zeros(micro_batch, 1, dtype=y.dtype), y[:, :-1]), dim=1)
        return torch.stack((src, tgt_in), dim=1), y  # token 0 starts the decoder input
    return model, make_batch, b._lm_loss


def build_vit(micro_batch=2, seq=64, precision="fp32", checkpoint="none", seed=0,
              patch=4, dim=64, heads=4, layers=2, classes=10):
    """``seq`` is the number of patch tokens (see the module docstring)."""
    torch.manual_seed(seed)
    model = _base()._finish(ViT(seq, patch, dim, heads, layers, classes, checkpoint), precision)
    rows, cols = vit_grid(seq)
    dtype = torch.bfloat16 if precision == "bf16" else torch.float32
    g = torch.Generator().manual_seed(seed + 1)

    def make_batch():
        x = torch.randn(micro_batch, 3, rows * patch, cols * patch, generator=g).to(dtype)
        y = torch.randint(0, classes, (micro_batch,), generator=g)
        return x, y
    return model, make_batch, F.cross_entropy


def build_moe(micro_batch=2, seq=128, precision="fp32", checkpoint="none", seed=0,
              vocab=256, dim=64, heads=4, layers=2, experts=4, top_k=2):
    torch.manual_seed(seed)
    model = MoEGPT(vocab, dim, heads, layers, max(seq, 128), experts, top_k, checkpoint)
    b = _base()
    return b._finish(model, precision), b._tokens(vocab, micro_batch, seq, seed + 1), b._lm_loss


BUILDERS = {"llama": build_llama, "gpt2fused": build_gpt2fused, "encdec": build_encdec,
            "vit": build_vit, "moe": build_moe}
