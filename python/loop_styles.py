"""Training-loop styles for recording the families of cpu_models.py on the CPU (issue 27).

The same model trained the way different codebases write their loop, so that Headroom's
categories and phases, which it infers from the stacks alone, can be scored against the
recorder's ground truth (``headroom_truth``, see headroom_cpu.py) under each of them. Every
style places ``cap.phase("forward" | "loss" | "backward" | "optimizer")`` and
``cap.iteration()`` where the work really happens, and passes the batch to ``cap.inputs``.

  plain       the loop of cpu_models.train: forward, loss, backward, step, zero_grad(None)
  closure     Lightning-style: ``optimizer.step(closure)``; the closure (a function named
              ``closure``) calls ``training_step`` of a LightningModule-like wrapper (forward
              and loss), then zero_grad, then backward, in Lightning's order. The forward,
              loss and backward markers are inside the closure; the optimizer marker opens
              when the closure returns and closes after ``step``: around the update only
  accum       gradient accumulation: 4 micro-steps (loss / 4) per optimizer step
  keep_grads  plain with ``zero_grad(set_to_none=False)``: gradients live across steps
  trainer     a Trainer with callbacks (on_train_batch_start, on_before_backward,
              on_after_backward, on_before_optimizer_step); the loop is Trainer.fit ->
              Trainer._run_batch; a callback computes the gradient norm (small tensors) in
              the optimizer phase, before the step
  gradpen     plain with a gradient penalty in the loss (``torch.autograd.grad`` of the loss
              with respect to the model's output, ``create_graph=True``, squared and added, as
              WGAN-GP and R1 penalties do): autograd's engine runs inside the loss phase
  jvp         plain whose model's forward adds a forward-mode product
              (``torch.autograd.functional.jvp`` of a tanh head, ``create_graph=True``), as a
              model regularised by its Jacobian does: autograd's engine runs inside the forward
              phase, and none of it is the backward
  scaler      loss scaling as torch.cuda.amp.GradScaler does it, emulated on the CPU
              (``GradScaler`` below): scaled loss, in-place unscale of the gradients in
              ``GradScaler.unscale_``, a found-inf check, then the step and the scale update

Recorded mid-run (issue 46): the model and optimizer are built and trained ``WARMUP`` steps
before the capture starts, as when recording is switched on after the optimizer exists; they
are passed as ``model=``/``optimizer=`` so the truth knows what each storage alive before the
trace is (tools/category_truth.py then moves them out of the trace, as a real snapshot has them):

  late_adamw  the plain loop with AdamW: weights and two moments alive before the trace
  late_sgdm   the plain loop with SGD momentum 0.9: weights and one momentum buffer
  late_keep   AdamW with ``zero_grad(set_to_none=False)``: the gradients too (four copies)
  late_adafactor  an Adafactor-like optimizer (``Adafactor`` below: a factored second moment,
              a row and a column vector per matrix, no first moment): weights and state a
              fraction of their size, which must not be read as parameters or gradients

``run_style(path, family, style)`` builds the family inside a capture (every tensor is seen
being allocated), trains ``iterations`` optimizer steps in the style and writes the
snapshot; the configuration is the one cpu_models.run_point writes (micro_batch, seq,
precision fp32, optimizer adamw, checkpoint none, accum, devices 1, iterations, model and
family), plus ``loop_style``.
"""

import contextlib
import functools

import torch

import cpu_models

STYLES = ("plain", "closure", "accum", "keep_grads", "trainer", "scaler", "gradpen", "jvp")
LATE_STYLES = ("late_adamw", "late_sgdm", "late_keep", "late_adafactor")
LATE = {"late_adamw": ("adamw", True), "late_sgdm": ("sgd-momentum", True),
        "late_keep": ("adamw", False), "late_adafactor": ("adafactor", True)}  # optimizer, set_to_none
WARMUP = 2
ACCUM = {"accum": 4}  # micro-steps per optimizer step, where a style accumulates


def style_accum(style):
    return ACCUM.get(style, 1)


# ---------------------------------------------------------------------- plain and variants
def train_plain(cap, model, optimizer, make_batch, loss_fn, iterations, accum=1,
                set_to_none=True):
    """The plain loop (``accum`` micro-steps per optimizer step): cpu_models.train."""
    cpu_models.train(model, optimizer, make_batch, loss_fn, "fp32", accum, iterations, cap,
                     set_to_none=set_to_none)


def train_accum(cap, model, optimizer, make_batch, loss_fn, iterations):
    train_plain(cap, model, optimizer, make_batch, loss_fn, iterations, accum=ACCUM["accum"])


def train_keep_grads(cap, model, optimizer, make_batch, loss_fn, iterations):
    train_plain(cap, model, optimizer, make_batch, loss_fn, iterations, set_to_none=False)


# ---------------------------------------------------------------------- Lightning-style closure
class LitModule(object):
    """A LightningModule-like wrapper: the model is called from ``training_step``."""

    def __init__(self, model, loss_fn, cap):
        self.model = model
        self.loss_fn = loss_fn
        self.cap = cap

    def training_step(self, batch, batch_idx):
        x, y = batch
        with self.cap.phase("forward"):
            out = self.model(x)
        with self.cap.phase("loss"):
            loss = self.loss_fn(out, y)
        return loss


def train_closure(cap, model, optimizer, make_batch, loss_fn, iterations):
    """``optimizer.step(closure)``, as Lightning's automatic optimization runs it."""
    module = LitModule(model, loss_fn, cap)
    model.train()
    for batch_idx in range(iterations):
        with cap.iteration():
            batch = cap.inputs(*make_batch())
            update = contextlib.ExitStack()

            def closure():
                loss = module.training_step(batch, batch_idx)
                optimizer.zero_grad(set_to_none=True)
                with cap.phase("backward"):
                    loss.backward()
                # what step() does after the closure returns is the update
                update.enter_context(cap.phase("optimizer"))
                return loss.detach()

            with update:
                optimizer.step(closure)
            del closure
            batch = None  # the batch dies with the iteration, as in the other styles


# ---------------------------------------------------------------------- trainer with callbacks
class Callback(object):
    """Hooks a Trainer calls; each does nothing unless overridden."""

    def on_train_batch_start(self, trainer, module, batch, batch_idx):
        pass

    def on_before_backward(self, trainer, module, loss):
        pass

    def on_after_backward(self, trainer, module):
        pass

    def on_before_optimizer_step(self, trainer, module, optimizer):
        pass


class GradNormCallback(Callback):
    """Logs the total gradient norm before every step (small temporaries)."""

    def __init__(self):
        self.norms = []

    def on_before_optimizer_step(self, trainer, module, optimizer):
        norms = [p.grad.detach().norm(2) for p in module.parameters() if p.grad is not None]
        total = torch.stack(norms).norm(2)
        self.norms.append(float(total))


class BatchCounter(Callback):
    def __init__(self):
        self.batches = self.backwards = 0

    def on_train_batch_start(self, trainer, module, batch, batch_idx):
        self.batches += 1

    def on_after_backward(self, trainer, module):
        self.backwards += 1


class Trainer(object):
    """A trainer-like wrapper: the loop lives in fit -> _run_batch."""

    def __init__(self, cap, callbacks=(), max_steps=1):
        self.cap = cap
        self.callbacks = list(callbacks)
        self.max_steps = max_steps

    def _call(self, hook, *args):
        for cb in self.callbacks:
            getattr(cb, hook)(self, *args)

    def fit(self, model, optimizer, make_batch, loss_fn):
        self.model, self.optimizer, self.loss_fn = model, optimizer, loss_fn
        model.train()
        for batch_idx in range(self.max_steps):
            with self.cap.iteration():
                batch = self.cap.inputs(*make_batch())
                self._run_batch(batch, batch_idx)
                del batch

    def _run_batch(self, batch, batch_idx):
        cap, model = self.cap, self.model
        self._call("on_train_batch_start", model, batch, batch_idx)
        x, y = batch
        with cap.phase("forward"):
            out = model(x)
        with cap.phase("loss"):
            loss = self.loss_fn(out, y)
        del out
        self._call("on_before_backward", model, loss)
        with cap.phase("backward"):
            loss.backward()
        del loss
        self._call("on_after_backward", model)
        with cap.phase("optimizer"):
            self._call("on_before_optimizer_step", model, self.optimizer)
            self.optimizer.step()
            self.optimizer.zero_grad(set_to_none=True)


def train_trainer(cap, model, optimizer, make_batch, loss_fn, iterations):
    trainer = Trainer(cap, [BatchCounter(), GradNormCallback()], max_steps=iterations)
    trainer.fit(model, optimizer, make_batch, loss_fn)


# ---------------------------------------------------------------------- loss scaling
class GradScaler(object):
    """An emulation of torch.cuda.amp.GradScaler on the CPU, not the real thing.

    torch 1.13's GradScaler works on CUDA tensors only (its unscale kernel,
    ``_amp_foreach_non_finite_check_and_unscale_``, has no CPU implementation), so this
    class allocates what it allocates, with plain ops: a one-element float scale and an int
    growth tracker made at the first ``scale`` (lazily, as the real one), the scaled loss
    (``loss * scale``, which autograd saves the scale for), in ``unscale_`` the inverse
    scale (double, reciprocal, float) and a one-element found-inf tensor, the gradients
    multiplied by the inverse scale in place, and per gradient a small non-finite check
    (the real kernel checks within the unscale); ``step`` reads found-inf and steps when it
    is zero; ``update`` grows or backs off the scale in place."""

    def __init__(self, init_scale=2.0 ** 16, growth_factor=2.0, backoff_factor=0.5,
                 growth_interval=2000):
        self._init_scale = init_scale
        self._growth_factor = growth_factor
        self._backoff_factor = backoff_factor
        self._growth_interval = growth_interval
        self._scale = None
        self._growth_tracker = None
        self._found_inf = None

    def _lazy_init_scale_growth_tracker(self):
        self._scale = torch.full((1,), self._init_scale, dtype=torch.float32)
        self._growth_tracker = torch.full((1,), 0, dtype=torch.int32)

    def scale(self, outputs):
        if self._scale is None:
            self._lazy_init_scale_growth_tracker()
        return outputs * self._scale

    def unscale_(self, optimizer):
        if self._found_inf is not None:
            return
        inv_scale = self._scale.double().reciprocal().float()
        found_inf = torch.full((1,), 0.0, dtype=torch.float32)
        with torch.no_grad():
            for group in optimizer.param_groups:
                for p in group["params"]:
                    if p.grad is None:
                        continue
                    g = p.grad
                    found_inf += (~torch.isfinite(g.sum())).float()
                    g.mul_(inv_scale)
        self._found_inf = found_inf

    def step(self, optimizer):
        if self._found_inf is None:
            self.unscale_(optimizer)
        if self._found_inf.item() == 0:
            return optimizer.step()
        return None

    def update(self):
        found = self._found_inf.item() != 0
        with torch.no_grad():
            if found:
                self._scale.mul_(self._backoff_factor)
                self._growth_tracker.zero_()
            else:
                self._growth_tracker.add_(1)
                if int(self._growth_tracker.item()) == self._growth_interval:
                    self._scale.mul_(self._growth_factor)
                    self._growth_tracker.zero_()
        self._found_inf = None


def train_scaler(cap, model, optimizer, make_batch, loss_fn, iterations):
    scaler = GradScaler()
    model.train()
    for _ in range(iterations):
        with cap.iteration():
            x, y = cap.inputs(*make_batch())
            with cap.phase("forward"):
                out = model(x)
            with cap.phase("loss"):
                loss = scaler.scale(loss_fn(out, y))
            del out
            with cap.phase("backward"):
                loss.backward()
            del loss, x, y
            with cap.phase("optimizer"):
                scaler.unscale_(optimizer)
                scaler.step(optimizer)
                scaler.update()
                optimizer.zero_grad(set_to_none=True)


def loss_with_penalty(loss_fn, out, y, weight=0.1):
    """The loss plus the squared gradient of it with respect to ``out`` (a gradient penalty)."""
    loss = loss_fn(out, y)
    (g,) = torch.autograd.grad(loss, out, create_graph=True)
    return loss + weight * g.pow(2).mean()


def train_gradpen(cap, model, optimizer, make_batch, loss_fn, iterations):
    """The plain loop whose loss carries a gradient penalty (the partial adds no frame: the
    stack shows loss_with_penalty under the loss phase, as a training script's would)."""
    train_plain(cap, model, optimizer, make_batch, functools.partial(loss_with_penalty, loss_fn),
                iterations)


class JvpForward(torch.nn.Module):
    """The model, its output plus a small Jacobian term computed in its forward: the jvp of a
    tanh head along ones (functional.jvp runs autograd's engine twice, the double-vjp trick)."""

    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, x):
        out = self.model(x)
        _, tangent = torch.autograd.functional.jvp(torch.tanh, (out,), (torch.ones_like(out),),
                                                   create_graph=True)
        return out + 1e-3 * tangent


def train_jvp(cap, model, optimizer, make_batch, loss_fn, iterations):
    """The plain loop over a model whose forward calls torch.autograd.functional.jvp."""
    train_plain(cap, JvpForward(model), optimizer, make_batch, loss_fn, iterations)


TRAIN = {"plain": train_plain, "closure": train_closure, "accum": train_accum,
         "keep_grads": train_keep_grads, "trainer": train_trainer, "scaler": train_scaler,
         "gradpen": train_gradpen, "jvp": train_jvp,
         # plain, cut by python/mid_run.py's as_wrapped to what a wrapped ring buffer keeps
         "wrapped": train_plain,
         # plain, cut by as_out_of_memory at an OOM halfway through the last forward / backward
         "oom_forward": train_plain, "oom_backward": train_plain}


def run_style(path, family, style, micro_batch=2, seq_mult=1, iterations=2, seed=0,
              optimizer="adamw", oracle=False, truth=True, **more):
    """Record ``family`` trained in ``style`` into ``path``; returns the capture.

    The model, optimizer and batches are built inside the captured block. ``oracle`` is off
    by default: the scoring needs the truth, not the peak check (tools/cpu_matrix.py)."""
    import headroom_cpu
    import distributed_styles
    if style in distributed_styles.DIST_STYLES:
        return distributed_styles.run_distributed(path, family, style, micro_batch, seq_mult,
                                                  iterations, seed, truth)
    if style in LATE:
        return run_late(path, family, style, micro_batch, seq_mult, iterations, seed, truth,
                        **more)
    if style not in TRAIN:
        raise ValueError("style must be one of %s, not %r" % (STYLES, style))
    seq = cpu_models.BASE_SEQ[family] * seq_mult
    accum = style_accum(style)
    kw = dict(micro_batch=micro_batch, seq=seq, precision="fp32", checkpoint="none",
              accum=accum, devices=1, iterations=iterations, optimizer=optimizer,
              model=family, family=family, seq_mult=seq_mult, prebuilt=False,
              loop_style=style, oracle=oracle, truth=truth)
    kw.update(more)
    with headroom_cpu.capture(path, **kw) as cap:
        model, make_batch, loss_fn = cpu_models.build(family, micro_batch, seq, "fp32", "none",
                                                      seed)
        opt = cpu_models.make_optimizer(optimizer, model.parameters())
        TRAIN[style](cap, model, opt, make_batch, loss_fn, iterations)
        # model and optimizer stay alive past the end of the trace, as in cpu_models.run_point
    return cap


class Adafactor(torch.optim.Optimizer):
    """Adafactor's memory, not its whole algorithm (torch 1.13 has none): per matrix a row and a
    column mean of the squared gradient (its last two dimensions factored), per vector the full
    second moment, no first moment, an integer step; the update is the gradient scaled by the
    reconstructed inverse root, made as temporaries in the step (Shazeer and Stern, 2018)."""

    def __init__(self, params, lr=1e-3, beta2=0.999, eps=1e-30):
        super().__init__(params, dict(lr=lr, beta2=beta2, eps=eps))

    @torch.no_grad()
    def step(self, closure=None):
        loss = closure() if closure is not None else None
        for group in self.param_groups:
            beta2, eps, lr = group["beta2"], group["eps"], group["lr"]
            for p in group["params"]:
                if p.grad is None:
                    continue
                self._update(p, self.state[p], beta2, eps, lr)
        return loss

    @staticmethod
    def _update(p, state, beta2, eps, lr):
        grad = p.grad
        factored = grad.dim() >= 2
        if not state:
            state["step"] = 0
            if factored:
                state["exp_avg_sq_row"] = torch.zeros(grad.shape[:-1])
                state["exp_avg_sq_col"] = torch.zeros(grad.shape[:-2] + grad.shape[-1:])
            else:
                state["exp_avg_sq"] = torch.zeros_like(grad)
        state["step"] += 1
        g2 = grad * grad + eps
        if factored:
            row, col = state["exp_avg_sq_row"], state["exp_avg_sq_col"]
            row.mul_(beta2).add_(g2.mean(dim=-1), alpha=1 - beta2)
            col.mul_(beta2).add_(g2.mean(dim=-2), alpha=1 - beta2)
            r = (row / row.mean(dim=-1, keepdim=True)).rsqrt().unsqueeze(-1)
            update = grad * r * col.rsqrt().unsqueeze(-2)
        else:
            v = state["exp_avg_sq"]
            v.mul_(beta2).add_(g2, alpha=1 - beta2)
            update = grad * v.rsqrt()
        p.add_(update, alpha=-lr)


def make_optimizer(name, params):
    """cpu_models.make_optimizer, and the Adafactor-like one above."""
    if name == "adafactor":
        return Adafactor(params)
    return cpu_models.make_optimizer(name, params)


def run_late(path, family, style, micro_batch=2, seq_mult=1, iterations=2, seed=0, truth=True,
             **more):
    """A LATE style: built and warmed up before the capture, recorded for ``iterations`` steps."""
    import headroom_cpu
    optimizer, set_to_none = LATE[style]
    more.pop("optimizer", None)
    more.pop("oracle", None)
    seq = cpu_models.BASE_SEQ[family] * seq_mult
    model, make_batch, loss_fn = cpu_models.build(family, micro_batch, seq, "fp32", "none", seed)
    opt = make_optimizer(optimizer, model.parameters())
    cpu_models.train(model, opt, make_batch, loss_fn, "fp32", 1, WARMUP, None,
                     set_to_none=set_to_none)
    kw = dict(micro_batch=micro_batch, seq=seq, precision="fp32", checkpoint="none", accum=1,
              devices=1, iterations=iterations, model=model, optimizer=opt, model_name=family,
              family=family, seq_mult=seq_mult, prebuilt=True, warmup_steps=WARMUP,
              loop_style=style, oracle=False, truth=truth)
    kw.update(more)
    with headroom_cpu.capture(path, **kw) as cap:
        train_plain(cap, model, opt, make_batch, loss_fn, iterations, set_to_none=set_to_none)
    return cap
