"""A peer runtime as a resident benchmark server for the showcase (py/tools/showcase.py).

Usage (on the GPU machine, torch + transformers):
  python3 py/tools/peers_bench.py --checkpoint=DIR --runtime=torch_graph|torch_compile|hf_eager
      [--device=cuda|cpu]

Same line protocol as host/bench.cc (stdin commands, one JSON line per answer on stdout):
  context C R   R samples, each the mean of 16 timed decode steps at contexts L-15 .. L,
                L = max(C, 16): the window host/bench.cc and llamacpp_bench.py time too
                -> {"context": C, "window": [first, last], "ms_per_token": [R values]}
  generate N    greedy N new tokens from --prompt_ids, selection included
                -> {"tokens": [...], "ms_per_token": m, "tokens_per_s": t}
  kernels       GPU kernels one decode step launches (torch.profiler) -> {"kernels": K}
  quit

Runtimes:
  torch_graph    a hand-written static-cache decode step in PyTorch (BF16 weights and K/V
                 cache, FP32 residual stream and softmax), captured once per cache length
                 in a CUDA graph and replayed (the plain CUDA-graph baseline).
  torch_compile  the same step through torch.compile (Inductor), then captured in a CUDA
                 graph: the strongest PyTorch baseline.
  hf_eager       Hugging Face transformers, eager attention, one forward per token with a
                 DynamicCache cropped back after every timed window.
The hand-written step attends (BF16, fused SDPA) over the first L rows of one K/V cache (a
CUDA graph per context; for torch_compile one compilation with L dynamic), so its cost grows
with the context as a real decode's does. Generation ms/token: wall time from the first new
token to the last / (N - 1), greedy selection on the device, one host sync per token.
On --device=cpu the graphs are skipped (the eager or compiled step runs), which is how the
step is checked against the numpy reference without a GPU (peers_bench_test is manual).
"""
import time

import numpy as np
import torch
from absl import app, flags
from torch.profiler import ProfilerActivity, profile

from planner import checkpoint as ckpt_lib
from tests.reference.numpy_llama import inv_freq_table
from tools import bench_protocol
from tools.bench_protocol import WINDOW

FLAGS = flags.FLAGS
flags.DEFINE_string("checkpoint", None, "HF checkpoint directory (the one the package came from).")
flags.DEFINE_enum("runtime", None, ["torch_graph", "torch_compile", "hf_eager"], "Which peer.")
flags.DEFINE_string("device", "cuda", "cuda, or cpu (no graphs, no compile: for checks).")
flags.DEFINE_list("prompt_ids", bench_protocol.PROMPT_IDS, "Prompt of `generate`.")
flags.DEFINE_integer("seed", 1234, "Seed of the tokens in the timed windows.")


def to_torch(a, device):
    """A BF16 numpy array (ml_dtypes) as a torch.bfloat16 tensor on `device`."""
    a = np.ascontiguousarray(a)
    return torch.from_numpy(a.view(np.int16).copy()).view(torch.bfloat16).to(device)


class TorchStep:
    """Batch-1 Llama decode step with static shapes.

    Weights are uploaded once; `state(cache_len)` makes the per-context tensors (K/V cache
    of cache_len positions, RoPE tables, row indices). step(token (1,) int64, pos (1,) int64,
    *state) -> logits (V,) float32, writing K/V row `pos`. Attention covers all cache rows
    with rows > pos masked, so a graph captured for one cache_len serves any pos < cache_len.
    The state is passed in (not kept on self) so that torch.compile sees the same weights and
    only new input shapes from one context to the next.
    """

    def __init__(self, checkpoint, device, inv_freq):
        c, w = checkpoint.config, checkpoint.weights
        self.c, self.device = c, device
        self.nh, self.nkv, self.hd = c.num_heads, c.num_kv_heads, c.head_dim
        self.group = self.nh // self.nkv
        self.inv_freq = torch.tensor(np.asarray(inv_freq, np.float64))
        t = lambda a: to_torch(a, device)  # noqa: E731
        self.embed = t(w.embed)
        self.lm_head = self.embed if w.lm_head is w.embed else t(w.lm_head)
        self.final_norm = t(w.final_norm).float()
        self.layers = []
        for lw in w.layers:
            self.layers.append(dict(
                attn_norm=t(lw.attn_norm).float(), ffn_norm=t(lw.ffn_norm).float(),
                wqkv=torch.cat([t(lw.wq), t(lw.wk), t(lw.wv)]), wo=t(lw.wo),
                wgu=torch.cat([t(lw.w_gate), t(lw.w_up)]), wdown=t(lw.w_down)))

    def state(self, cache_len):
        """(k_caches, v_caches, rows, cos, sin) for a cache of cache_len positions.

        Caches are (nkv, cache_len, hd) BF16, the layout attention reads directly.
        """
        angles = torch.arange(cache_len, dtype=torch.float64)[:, None] * self.inv_freq[None]
        k = [torch.zeros(self.nkv, cache_len, self.hd, dtype=torch.bfloat16, device=self.device)
             for _ in self.layers]
        v = [torch.zeros_like(x) for x in k]
        return (k, v, torch.arange(cache_len, device=self.device),
                angles.cos().float().to(self.device), angles.sin().float().to(self.device))

    def _norm(self, x, g):
        return (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.c.rms_norm_eps) * g).to(torch.bfloat16)

    def _rope(self, x, cos, sin):
        half = self.hd // 2
        x1, x2 = x[..., :half], x[..., half:]
        return torch.cat([x1 * cos - x2 * sin, x2 * cos + x1 * sin], dim=-1)

    def step(self, token, pos, k_caches, v_caches, rows, cos_table, sin_table):
        F = torch.nn.functional
        q_dim, kv_dim = self.nh * self.hd, self.nkv * self.hd
        x = self.embed[token].float()  # (1, H)
        cos, sin = cos_table[pos], sin_table[pos]  # (1, hd/2)
        keep = (rows <= pos)[None, None, None, :]  # (1, 1, 1, L): rows written so far
        for li, w in enumerate(self.layers):
            qkv = F.linear(self._norm(x, w["attn_norm"]), w["wqkv"]).float()[0]
            q = self._rope(qkv[:q_dim].view(self.nh, self.hd), cos, sin)
            k = self._rope(qkv[q_dim:q_dim + kv_dim].view(self.nkv, self.hd), cos, sin)
            v = qkv[q_dim + kv_dim:].view(self.nkv, self.hd)
            k_caches[li].index_copy_(1, pos, k.to(torch.bfloat16)[:, None])
            v_caches[li].index_copy_(1, pos, v.to(torch.bfloat16)[:, None])
            # BF16 attention over the cache as it is stored (no FP32 copy of K/V), grouped
            # query heads without repeating K/V (PyTorch's fused SDPA).
            out = F.scaled_dot_product_attention(
                q.to(torch.bfloat16)[None, :, None, :], k_caches[li][None], v_caches[li][None],
                attn_mask=keep, enable_gqa=True).reshape(1, q_dim)
            x = x + F.linear(out.to(torch.bfloat16), w["wo"]).float()
            gate, up = F.linear(self._norm(x, w["ffn_norm"]), w["wgu"]).float().chunk(2, dim=-1)
            x = x + F.linear((F.silu(gate) * up).to(torch.bfloat16), w["wdown"]).float()
        return F.linear(self._norm(x, self.final_norm), self.lm_head).float()[0]


class GraphRunner:
    """TorchStep, eager, compiled, and/or captured in a CUDA graph per cache length.

    One K/V cache of max_len positions lives for the whole run; the step for a context of
    L positions sees views of its first L rows (attention cost grows with L, as in a real
    decode). Rows are filled by real decode steps, once: `filled` counts the valid rows, and
    later contexts only step the positions not yet written (as host/bench.cc does).
    torch_compile compiles once, with the cache length marked dynamic (torch._dynamo
    mark_dynamic), then each context's step is captured in its own CUDA graph.
    """

    def __init__(self, checkpoint, device, compile_step, inv_freq, max_len=4096):
        self.device, self.graphs, self.max_len, self.filled = device, {}, max_len, 0
        self.model = TorchStep(checkpoint, device, inv_freq)
        self.cache = self.model.state(max_len)
        self.use_graph = device.startswith("cuda")
        self.compiled = compile_step
        self.fn = torch.compile(self.model.step) if compile_step else self.model.step

    def _state(self, cache_len):
        if not 1 <= cache_len <= self.max_len:
            raise ValueError(f"cache length {cache_len} is outside 1..{self.max_len}, the K/V cache's length")
        k, v, rows, cos, sin = self.cache
        state = ([x[:, :cache_len] for x in k], [x[:, :cache_len] for x in v], rows[:cache_len],
                 cos[:cache_len], sin[:cache_len])
        if self.compiled:  # one compilation for every cache length
            for x in state[0] + state[1]:
                torch._dynamo.mark_dynamic(x, 1)
            for x in state[2:]:
                torch._dynamo.mark_dynamic(x, 0)
        return state

    def _build(self, cache_len):
        if cache_len in self.graphs:
            return self.graphs[cache_len]
        self.graphs.clear()  # one graph resident at a time (its memory pool)
        token = torch.zeros(1, dtype=torch.long, device=self.device)
        pos = torch.zeros(1, dtype=torch.long, device=self.device)
        state = self._state(cache_len)
        entry = dict(token=token, pos=pos, state=state, graph=None, logits=None)
        if self.use_graph:
            pos.fill_(cache_len - 1)  # warm-up writes K/V row cache_len - 1, which a step rewrites
            stream = torch.cuda.Stream()
            stream.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(stream):
                for _ in range(3):  # warm-up (and compilation) outside the capture
                    self.fn(token, pos, *state)
            torch.cuda.current_stream().wait_stream(stream)
            graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(graph):
                entry["logits"] = self.fn(token, pos, *state)
            entry["graph"] = graph
        self.graphs[cache_len] = entry
        return entry

    def run(self, entry, token, pos):
        """One step; returns the logits tensor (the graph's output buffer on the GPU)."""
        entry["token"].fill_(token)
        entry["pos"].fill_(pos)
        if entry["graph"] is not None:
            entry["graph"].replay()
            return entry["logits"]
        return self.fn(entry["token"], entry["pos"], *entry["state"])

    def context(self, c, reps, tokens):
        last = max(c, WINDOW)  # the window every runtime times: contexts last-15 .. last
        entry = self._build(last)
        first = last - WINDOW
        for p in range(self.filled, first):  # K/V rows before the window, each written once
            self.run(entry, tokens[p], p)
        self.filled = max(self.filled, last)
        return [self._time(lambda: [self.run(entry, tokens[p], p) for p in range(first, last)]) / WINDOW
                for _ in range(reps)], (first + 1, last)

    def _time(self, fn):
        if self.use_graph:
            start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            fn()
            stop.record()
            stop.synchronize()
            return start.elapsed_time(stop)
        t0 = time.perf_counter()
        fn()
        return (time.perf_counter() - t0) * 1e3

    def generate(self, prompt, n):
        entry = self._build(len(prompt) + n)
        for p, t in enumerate(prompt[:-1]):
            self.run(entry, t, p)
        out, token, t_first = [], prompt[-1], 0.0
        for i in range(n):
            out.append(int(torch.argmax(self.run(entry, token, len(prompt) - 1 + i))))  # syncs
            token = out[-1]
            if i == 0:
                t_first = time.perf_counter()
        self.filled = 0  # the generation rewrote the K/V rows from position 0
        # Wall time from the first new token to the last, per token (as host/bench.cc).
        return out, (time.perf_counter() - t_first) * 1e3 / max(1, n - 1)


class HfEager:
    """transformers AutoModelForCausalLM, eager attention, DynamicCache."""

    def __init__(self, directory, device):
        import transformers  # pylint: disable=import-outside-toplevel
        self.device = device
        self.model = transformers.AutoModelForCausalLM.from_pretrained(
            directory, dtype=torch.bfloat16, attn_implementation="eager").to(device).eval()
        self.cache_cls = transformers.DynamicCache

    def _forward(self, ids, cache):
        with torch.no_grad():
            return self.model(input_ids=torch.tensor([ids], device=self.device),
                              past_key_values=cache, use_cache=True).logits[0, -1]

    def _sync(self):
        if self.device.startswith("cuda"):
            torch.cuda.synchronize()

    def context(self, c, reps, tokens):
        last = max(c, WINDOW)  # the window every runtime times: contexts last-15 .. last
        first = last - WINDOW
        cache = self.cache_cls()
        if first > 0:
            self._forward(tokens[:first], cache)
        samples = []
        for _ in range(reps):
            self._sync()
            t0 = time.perf_counter()
            for p in range(first, last):
                self._forward([tokens[p]], cache)
            self._sync()
            samples.append((time.perf_counter() - t0) * 1e3 / WINDOW)
            cache.crop(-WINDOW)  # back to `first` positions (transformers 5 takes a negative count)
        return samples, (first + 1, last)

    def generate(self, prompt, n):
        cache = self.cache_cls()
        out = [int(torch.argmax(self._forward(prompt, cache)))]
        t_first = time.perf_counter()
        for _ in range(n - 1):
            out.append(int(torch.argmax(self._forward([out[-1]], cache))))
        return out, (time.perf_counter() - t_first) * 1e3 / max(1, n - 1)


def count_kernels(step):
    """CUDA kernels launched by one call of `step` (torch.profiler)."""
    step()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        step()
        torch.cuda.synchronize()
    return sum(1 for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA)


def serve(runner, tokens, prompt, kernels_fn, out=None, inp=None):
    """The line protocol (module docstring; tools/bench_protocol.py)."""

    def answer(parts):
        if parts[0] == "context" and len(parts) == 3:
            c, reps = int(parts[1]), int(parts[2])
            if c < 1 or c > len(tokens) or reps < 1:
                raise ValueError(f"context must be in 1..{len(tokens)} and reps >= 1")
            ms, window = runner.context(c, reps, tokens)
            return {"context": c, "window": list(window), "ms_per_token": ms}
        if parts[0] == "generate" and len(parts) == 2:
            toks, ms = runner.generate(prompt, int(parts[1]))
            return {"tokens": toks, "ms_per_token": ms, "tokens_per_s": 1e3 / ms if ms else 0}
        if parts[0] == "kernels":
            return {"kernels": kernels_fn()}
        raise bench_protocol.unknown(parts)

    bench_protocol.serve(FLAGS.runtime, answer, inp=inp, out=out)


def main(argv):
    if len(argv) > 1:
        raise app.UsageError(f"unexpected arguments: {argv[1:]}")
    torch.manual_seed(0)
    ck = ckpt_lib.load_checkpoint(FLAGS.checkpoint)
    c = ck.config
    rng = np.random.default_rng(FLAGS.seed)
    tokens = [int(t) for t in rng.integers(0, c.vocab_size, size=min(c.max_position_embeddings, 4096))]
    prompt = [int(t) for t in FLAGS.prompt_ids]
    if FLAGS.runtime == "hf_eager":
        runner = HfEager(FLAGS.checkpoint, FLAGS.device)
        kernels_fn = lambda: count_kernels(lambda: runner._forward([tokens[0]], runner.cache_cls()))  # noqa: E731
    else:
        inv_freq = inv_freq_table(c.head_dim, c.rope_theta, c.rope_scaling)
        runner = GraphRunner(ck, FLAGS.device, FLAGS.runtime == "torch_compile", inv_freq,
                             max_len=len(tokens))

        def kernels_fn():
            entry = runner._build(64)
            return count_kernels(lambda: runner.run(entry, tokens[0], 63))
    serve(runner, tokens, prompt, kernels_fn)


if __name__ == "__main__":
    flags.mark_flags_as_required(["checkpoint", "runtime"])
    app.run(main)
