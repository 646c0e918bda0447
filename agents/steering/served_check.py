"""Does the served steerer equal the trained one? A LoRA steerer scored through an inference server, checked
against the same steerer in this process.

Why: a steerer is trained here (peft LoRA over a transformers model) and deployed behind vLLM with its adapter
(``--enable-lora --lora-modules``). Nothing in that hand-over is checked by training or evaluation: a wrong
adapter target, a rank the server truncates, a tokenizer or dtype mismatch would all still "work" and quietly
score a different policy. :func:`check_served_adapter` asks the server for the log-probabilities of exactly the
token ids the local steerer scores (token-id prompts, each scored token forced:
:meth:`~steer_envs.llm.openai_client.OpenAIBackend.continuation_logprobs`, so no text is re-tokenised) and
compares, on each given state:

* the fast path: ``z = log P(yes) − log P(no)`` of the token after the fast prompt (the local steerer's logit
  difference, which is the same number);
* the slow path: ``log π(sample)`` of slow-path samples drawn locally, every scored row (reasoning tokens, the
  grammar's NAME and ARGUMENT choices) scored by the server, combined exactly as the local steerer combines them.

Both are compared in fp32 with an absolute tolerance; :class:`AdapterCheck` keeps the largest differences.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import torch

#: fp32 on both sides: the engine's kernels (fused attention, LoRA as separate matmuls) reorder sums; measured
#: against vLLM's CPU build, per-token log-probs and slow-path sums agree to about 1e-5 (BENCHMARKS.md)
DEFAULT_TOLERANCE = 1e-4


@dataclass(frozen=True)
class AdapterCheck:
    """The largest absolute differences served − local over ``states`` states (``slow_samples`` slow samples of
    ``slow_tokens`` scored tokens), against ``tolerance``."""

    states: int
    fast_max_abs_diff: float
    slow_samples: int
    slow_tokens: int
    slow_max_abs_diff: float
    token_max_abs_diff: float
    tolerance: float

    @property
    def ok(self) -> bool:
        return max(self.fast_max_abs_diff, self.slow_max_abs_diff, self.token_max_abs_diff) <= self.tolerance

    def as_dict(self) -> dict[str, Any]:
        return {**asdict(self), "ok": self.ok}


class ServedRowScorer:
    """Scores ``log P(row[start:] | row[:start])`` for token-id rows through a server's prompt log-probs, and keeps
    the per-token values for the token-level comparison."""

    def __init__(self, backend: Any) -> None:
        self.backend = backend
        self.tokens: list[tuple[list[int], int, list[float]]] = []

    def __call__(self, rows: Sequence[Sequence[int]], starts: Sequence[int]) -> torch.Tensor:
        tables = self.backend.continuation_logprobs([list(r) for r in rows], list(starts))
        sums = []
        for row, start, scored in zip(rows, starts, tables):
            self.tokens.append((list(row), int(start), scored))
            sums.append(sum(scored))
        return torch.tensor(sums, dtype=torch.float32)


def _local_token_logprobs(steerer: Any, row: list[int], start: int) -> torch.Tensor:
    """``log P(row[j] | row[:j])`` for ``j >= start`` under the local model: logits only at the positions that
    predict those tokens (a prompt of a thousand tokens needs a handful of vocabulary-sized rows, not all)."""
    ids = torch.tensor([row], dtype=torch.long, device=steerer.device)
    keep = len(row) - start + 1  # the logits at position j predict token j + 1
    with torch.no_grad():
        logits = steerer.lm(input_ids=ids, use_cache=False, logits_to_keep=keep).logits[0, :-1].float()
    return torch.log_softmax(logits, dim=-1).gather(-1, ids[0, start:, None]).squeeze(-1).cpu()


def check_served_adapter(
    steerer: Any,
    backend: Any,
    observations: Sequence[Any],
    slow_samples: int = 1,
    seed: int = 0,
    tolerance: float = DEFAULT_TOLERANCE,
) -> AdapterCheck:
    """Compare ``steerer`` (a :class:`~agents.steering.causal_lm.CausalLMSteerer`, its adapter loaded) with the same
    model served by ``backend`` (an ``openai:`` backend naming the served adapter) on ``observations``."""
    scorer = ServedRowScorer(backend)
    was_training = steerer.training
    steerer.train(False)
    try:
        with torch.no_grad():
            local_z = steerer.fast_scores(list(observations)).float().cpu()
            served_z = []
            for observation in observations:
                prompt = steerer.fast_prompt_ids(observation)
                yes, no = scorer([prompt + [steerer.yes_id], prompt + [steerer.no_id]], [len(prompt)] * 2)
                served_z.append(float(yes - no))
            scorer.tokens.clear()  # the token-level comparison is over the slow path's rows
            generator = torch.Generator().manual_seed(seed)
            slow_diffs = []
            for observation in observations:
                samples = steerer.sample_slow(observation, slow_samples, generator)
                local = steerer.slow_logprobs(observation, samples).float().cpu()
                served = steerer.slow_logprobs(observation, samples, row_scorer=scorer).float().cpu()
                slow_diffs.append((served - local).abs().max().item())
            token_diffs, token_count = [0.0], 0
            for row, start, served_tokens in scorer.tokens:
                local_tokens = _local_token_logprobs(steerer, row, start)
                token_diffs.append((torch.tensor(served_tokens) - local_tokens).abs().max().item())
                token_count += len(served_tokens)
    finally:
        steerer.train(was_training)
    fast_diff = (torch.tensor(served_z) - local_z).abs().max().item() if len(served_z) else 0.0
    return AdapterCheck(
        states=len(observations),
        fast_max_abs_diff=fast_diff,
        slow_samples=len(observations) * slow_samples,
        slow_tokens=token_count,
        slow_max_abs_diff=max(slow_diffs, default=0.0),
        token_max_abs_diff=max(token_diffs),
        tolerance=tolerance,
    )


def decision_states(count: int, seed: int = 0) -> list[dict[str, Any]]:
    """``count`` decision states as the state bank collects them: the simulated executor's episodes (nq and
    hotpotqa, train split) under a pass policy, every decision point, episodes seeded from ``seed`` on."""
    import gymnasium as gym

    import steer_envs  # noqa: F401 - registers the env ids
    from steer_envs.ids import STEERING_ENV

    env = gym.make(STEERING_ENV, executor="sim:default", benchmarks=["nq", "hotpotqa"], split="train")
    states: list[dict[str, Any]] = []
    try:
        while len(states) < count:
            obs, _ = env.reset(seed=seed)
            done = False
            while not done and len(states) < count:
                states.append(obs)
                obs, _, terminated, truncated, _ = env.step(0)
                done = terminated or truncated
            seed += 1
    finally:
        env.close()
    return states


def write_perturbed_adapter(
    options: Any, model: str | Path, folder: str | Path, rank: int, seed: int = 7, scale: float = 0.2
) -> Path:
    """A LoRA steerer's adapter folder as training writes it (``save_adapter``), its weights drawn from
    ``N(0, scale²)`` instead of peft's zero start.

    Why: an untouched adapter is the identity, so a server that ignored it would score alike and no comparison
    could tell a missing adapter from a loaded one."""
    from agents.steering.causal_lm import CausalLMSteerer

    steerer = CausalLMSteerer(options, model=str(model), lora=True, lora_rank=rank)
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, parameter in steerer.lm.named_parameters():
            if "lora_" in name:
                parameter.copy_(torch.randn(parameter.shape, generator=generator) * scale)
    return steerer.save_adapter(Path(folder))
