"""EncoderSteerer: a small torch steerer over hashed n-gram features; trains on a laptop CPU in minutes.

Architecture (θ is everything below):

* encoder: ``h = tanh(W [EmbeddingBag(hashed n-grams) ; stats] + b)`` (with ``reader=``, the answerability
  reader's judgement of the latest documents joins the statistics);
* fast head (the log-odds ``z`` the gate reads): by default ``z = w_fast · h + b_fast`` on the shared encoder
  state (``fast_input="encoder"``), so the ranking loss also shapes the representation the slow head reads.
  ``fast_input="stats"`` gives the fast path a small MLP of its own over the behavioural statistics plus a few
  fast-path-only ones (turn one-hot, invalid streak), ``z = w · tanh(W_f stats + b_f) + b``, with no n-grams: a
  priority that cannot memorise training tasks by their words. How it ranks held-out states and what its RL agent
  gains, with the paper's same-task ranking pairs and with pairs across tasks (``rank_pairs="any"``, not the
  paper): docs/steering_learning.md. The default is the paper's setting;
* slow head: a categorical over the intervention options read from ``h``, then, for options with a slot, a
  categorical over argument spans of the observation scored as ``(W_arg[option] h) · e(span)``, where ``e(span)``
  embeds the span's hashed words and where it occurs. The rationale is a short deterministic description of what the
  features showed, so every intervention comes with a human-readable reason.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import torch
from torch import nn

from steer_envs.errors import SteerEnvsError

from .features import FAST_EXTRA_NAMES, STAT_NAMES, HashedFeatures, _bucket, content_words, split_observation, words
from .interventions import PASS_TEXT, InterventionOption, argument_candidates
from .steerer import SlowSample, Steerer

SPAN_STATS = 5
#: what ``reader=<encoder spec>`` adds to the statistics: the answerability reader's judgement of the latest
#: retrieved documents (:mod:`steer_envs.reader`): best score, the top-ranked document's, the mean, and whether
#: anything was retrieved yet
READER_FEATURE_NAMES: tuple[str, ...] = ("reader_max", "reader_top1", "reader_mean", "reader_retrieved")
#: observation featurizers by env kind (``features=`` of the steerer, ``backbone_args`` of the trainer config)
FEATURIZERS: dict[str, str] = {
    "search": "agents.steering.features:HashedNgramFeaturizer",
    "handoff": "agents.steering.handoff_features:HandoffFeaturizer",
}


def make_featurizer(kind: str, dim: int):
    import importlib

    if kind not in FEATURIZERS:
        from steer_envs.errors import unknown_name

        raise unknown_name("steerer feature set", kind, list(FEATURIZERS))
    module, _, name = FEATURIZERS[kind].partition(":")
    return getattr(importlib.import_module(module), name)(dim)


#: what the fast path reads: ``stats`` = its own small MLP over the behavioural statistics (generalises across
#: tasks; the hashed n-grams let a priority memorise training tasks), ``encoder`` = the shared encoder state ``h``
FAST_INPUTS = ("stats", "encoder")


def span_stats(span: str, goal: str, transcript: str, position: int) -> np.ndarray:
    """Where a candidate span occurs: in the goal, in the latest evidence, how recent, already in a query."""
    low = transcript.lower()
    last = low[-1500:]
    key = span.lower()
    goal_words = content_words(goal)
    span_words = content_words(span)
    return np.asarray(
        [
            len(span_words & goal_words) / max(1, len(span_words)),
            float(key in last),
            low.count(key) / 5.0,
            position / 12.0,
            float(key in goal.lower()),
        ],
        dtype=np.float32,
    )


class EncoderSteerer(Steerer):
    kind = "encoder"

    def __init__(
        self,
        options: Sequence[InterventionOption],
        *,
        hash_dim: int = 1 << 15,
        span_hash_dim: int = 1 << 13,
        embed_dim: int = 32,
        hidden: int = 64,
        max_arguments: int = 12,
        seed: int = 0,
        features: str = "search",
        fast_hidden: int = 32,
        # -- research switches: each default is the paper's architecture -------------------------------------
        fast_input: str = "encoder",
        reader: str = "",
        slow_pass: bool = False,
        pass_prior: float = 0.0,
        pass_reads_fast: bool = False,
    ) -> None:
        """``options``: the intervention options; ``hash_dim``, ``span_hash_dim``, ``embed_dim``, ``hidden``,
        ``fast_hidden``: the sizes of the n-gram table, the span table, the n-gram embedding, the encoder state and
        the ``fast_input="stats"`` trunk; ``max_arguments``: argument spans scored per option; ``seed``: the
        initialisation; ``features``: the observation featurizer (:data:`FEATURIZERS`, by env kind).

        Research switches (each default is the paper's architecture; ``backbone_args`` of a steering config sets
        them): ``fast_input`` (what the fast path reads, :data:`FAST_INPUTS`), ``reader`` (an answerability-reader
        encoder spec whose scores join the statistics), ``slow_pass``, ``pass_prior`` and ``pass_reads_fast`` (the
        slow path may choose "pass", below)."""
        super().__init__(options)
        #: whether "pass" is one of the slow path's choices (the paper's pass ∪ A_int at every decision): an extra,
        #: last output of the option head. Off by default (the slow path always intervenes once the gate opens);
        #: on, a steerer whose gate is open at every decision can still let one by
        self.slow_pass = bool(slow_pass)
        #: the slow path's initial probability of "pass" (``slow_pass`` only; 0: the head's plain initialisation,
        #: about 1 / (options + 1)). A steerer asked at every hand-off starts near "let it by" and learns where a
        #: note pays, the way a prompted steerer that notes only what it sees wrong starts, instead of starting as a
        #: random intervener that must first unlearn the notes that hurt
        self.pass_prior = float(pass_prior)
        if self.pass_prior and not (self.slow_pass and 0.0 < self.pass_prior < 1.0):
            raise SteerEnvsError(
                f"pass_prior must be in (0, 1) and needs slow_pass=True, got pass_prior={pass_prior!r}, "
                f"slow_pass={slow_pass!r}"
            )
        #: whether the slow path's pass logit reads the fast path's log-odds z (``slow_pass`` only): pass logit =
        #: head output − g · z, z detached (the fast path stays trained by its ranking loss alone) and g a learned
        #: gain (1 at start). A steerer asked at every hand-off then knows what its own fast path learned about
        #: where a note matters, instead of relearning it from GRPO's few samples per state: the paper's one model
        #: answers both questions from the same state, and this is the encoder's way to share the answer
        self.pass_reads_fast = bool(pass_reads_fast)
        if self.pass_reads_fast and not self.slow_pass:
            raise SteerEnvsError(
                "pass_reads_fast makes the slow path's pass read the fast path's z: it needs slow_pass=True"
            )
        #: a deployment setting, not a parameter (not in the spec, nor the state dict): added to the pass logit at
        #: decision time (``slow_pass`` only), the slow path's counterpart of the gate's τ, chosen on dev by whoever
        #: deploys the steerer (``baselines.handoff``'s ``pass_bias=dev``); 0 leaves the trained policy as it is
        self.pass_bias = 0.0
        self.hash_dim = hash_dim
        self.span_hash_dim = span_hash_dim
        self.embed_dim = embed_dim
        self.hidden = hidden
        self.max_arguments = max_arguments
        self.seed = seed
        if fast_input not in FAST_INPUTS:
            raise SteerEnvsError(f"fast_input must be one of {FAST_INPUTS}, got {fast_input!r}")
        self.fast_input = fast_input
        self.fast_hidden = fast_hidden
        self.features = features
        self.reader = reader
        self._reader_model: Any = None  # the reader (steer_envs.reader), loaded on first use
        if reader:  # fail fast on an unknown encoder, before any parameter is built
            from steer_envs.reader import check_encoder_spec

            check_encoder_spec(reader)
        n_reader = len(READER_FEATURE_NAMES) if reader else 0
        self.featurizer = make_featurizer(features, hash_dim)
        n_stats = len(getattr(self.featurizer, "stat_names", STAT_NAMES))
        n_fast_extra = len(getattr(self.featurizer, "fast_extra_names", FAST_EXTRA_NAMES))
        with torch.random.fork_rng():
            torch.manual_seed(seed)
            self.bag = nn.EmbeddingBag(hash_dim, embed_dim, mode="sum")
            nn.init.normal_(self.bag.weight, std=0.01)
            self.encode = nn.Linear(embed_dim + n_stats + n_reader, hidden)
            if fast_input == "stats":
                self.fast_trunk: nn.Module = nn.Sequential(
                    nn.Linear(n_stats + n_fast_extra + n_reader, fast_hidden), nn.Tanh()
                )
                self.fast_head = nn.Linear(fast_hidden, 1)
            else:
                self.fast_trunk = nn.Identity()
                self.fast_head = nn.Linear(hidden, 1)
            self.option_head = nn.Linear(hidden, len(self.options) + (1 if self.slow_pass else 0))
            if self.pass_prior:  # the pass logit's bias gives it pass_prior of the softmax over the initial biases
                with torch.no_grad():
                    others = torch.logsumexp(self.option_head.bias[:-1], dim=0)
                    self.option_head.bias[-1] = float(np.log(self.pass_prior / (1.0 - self.pass_prior))) + others
            if self.pass_reads_fast:
                self.pass_gain = nn.Parameter(torch.ones(()))
            self.span_bag = nn.EmbeddingBag(span_hash_dim, hidden, mode="mean")
            nn.init.normal_(self.span_bag.weight, std=0.05)
            self.span_stats = nn.Linear(SPAN_STATS, hidden)
            self.arg_query = nn.Linear(hidden, hidden * len(self.options))
            nn.init.zeros_(self.fast_head.bias)

    def build_spec(self) -> dict[str, Any]:
        return {
            "hash_dim": self.hash_dim,
            "span_hash_dim": self.span_hash_dim,
            "embed_dim": self.embed_dim,
            "hidden": self.hidden,
            "max_arguments": self.max_arguments,
            "seed": self.seed,
            "fast_input": self.fast_input,
            "fast_hidden": self.fast_hidden,
            **({"features": self.features} if self.features != "search" else {}),
            **({"reader": self.reader} if self.reader else {}),
            **({"slow_pass": True} if self.slow_pass else {}),
            **({"pass_prior": self.pass_prior} if self.pass_prior else {}),
            **({"pass_reads_fast": True} if self.pass_reads_fast else {}),
        }

    # -- encoding -------------------------------------------------------------------------------------------
    @property
    def device(self) -> torch.device:
        """Where the parameters are (the trainer's ``place`` may have moved them to a GPU): every input tensor
        built from the featurised observation is made there."""
        return self.bag.weight.device

    def _features(self, observations: Sequence[Any]) -> list[HashedFeatures]:
        return [self.featurizer(o) for o in observations]

    def hidden_states(self, observations: Sequence[Any]) -> torch.Tensor:
        feats = self._features(observations)
        device = self.device
        ids = torch.from_numpy(np.concatenate([f.ids for f in feats])).to(device)
        weights = torch.from_numpy(np.concatenate([f.weights for f in feats])).to(device)
        offsets = torch.tensor(np.cumsum([0] + [len(f.ids) for f in feats[:-1]]), dtype=torch.long, device=device)
        bag = self.bag(ids, offsets, per_sample_weights=weights)
        stats = torch.from_numpy(np.stack([f.stats for f in feats])).to(device)
        parts = [bag, stats]
        if self.reader:
            parts.append(self._reader_vectors(observations))
        return torch.tanh(self.encode(torch.cat(parts, dim=1)))

    def reader_features(self, observation: Any) -> np.ndarray:
        """The :data:`READER_FEATURE_NAMES` values of one observation (the reader is trained, or loaded from the
        cache, on first use; it is shared by every steerer of the process with the same encoder)."""
        if self._reader_model is None:
            from steer_envs.reader import ReaderConfig, shared_reader

            self._reader_model = shared_reader(ReaderConfig(encoder=self.reader))
        scores = self._reader_model.score_observation(observation)
        if not len(scores):
            return np.zeros(len(READER_FEATURE_NAMES), dtype=np.float32)
        return np.asarray([scores.max(), scores[0], scores.mean(), 1.0], dtype=np.float32)

    def _reader_vectors(self, observations: Sequence[Any]) -> torch.Tensor:
        return torch.from_numpy(np.stack([self.reader_features(o) for o in observations])).to(self.device)

    # -- fast path ------------------------------------------------------------------------------------------
    def fast_scores(self, observations: Sequence[Any]) -> torch.Tensor:
        if self.fast_input == "stats":
            feats = [self.featurizer(o) for o in observations]
            stats = torch.from_numpy(np.stack([np.concatenate([f.stats, f.fast_extra]) for f in feats])).to(self.device)
            if self.reader:
                stats = torch.cat([stats, self._reader_vectors(observations)], dim=1)
            return self.fast_head(self.fast_trunk(stats)).squeeze(-1)
        return self.fast_head(self.fast_trunk(self.hidden_states(observations))).squeeze(-1)

    # -- slow path ------------------------------------------------------------------------------------------
    def _argument_logits(self, observation: Any, h: torch.Tensor, option_pos: int, spans: list[str]) -> torch.Tensor:
        goal, transcript, _, _ = split_observation(observation)
        ids: list[int] = []
        offsets: list[int] = []
        for span in spans:
            offsets.append(len(ids))
            toks = words(span) or ["<empty>"]
            ids.extend(_bucket("s|" + t, self.span_hash_dim) for t in toks)
        device = self.device
        emb = self.span_bag(
            torch.tensor(ids, dtype=torch.long, device=device), torch.tensor(offsets, dtype=torch.long, device=device)
        )
        stats = torch.from_numpy(np.stack([span_stats(s, goal, transcript, i) for i, s in enumerate(spans)])).to(device)
        span_vecs = emb + self.span_stats(stats)
        query = self.arg_query(h).view(len(self.options), self.hidden)[option_pos]
        return span_vecs @ query

    def _distributions(self, observation: Any) -> tuple[torch.Tensor, torch.Tensor, list[str]]:
        h = self.hidden_states([observation])[0]
        logits = self.option_head(h)
        if self.pass_reads_fast:
            with torch.no_grad():
                z = (
                    self.fast_head(self.fast_trunk(h)).squeeze(-1)
                    if self.fast_input != "stats"
                    else self.fast_scores([observation])[0]
                )
            logits = torch.cat([logits[:-1], logits[-1:] - self.pass_gain * z])
        if self.pass_bias:
            logits = torch.cat([logits[:-1], logits[-1:] + self.pass_bias])
        option_logp = torch.log_softmax(logits, dim=-1)
        spans = argument_candidates(observation, self.max_arguments)
        return h, option_logp, spans

    def _rationale(self, observation: Any, option: InterventionOption, argument: str) -> str:
        feats = self.featurizer(observation).stats
        if hasattr(self.featurizer, "rationale"):  # a featurizer of another env kind explains its own statistics
            return f"{self.featurizer.rationale(feats)} -> {option.name}" + (f" ({argument})" if argument else "")
        stat = dict(zip(STAT_NAMES, feats.tolist()))
        searches = round(stat["searches"] * 10)
        repeated = round(stat["repeated_queries"] * 5)
        reason = (
            f"turn {round(stat['turn'] * 10)}: {searches} searches, {repeated} repeated; evidence covers "
            f"{stat['evidence_goal_overlap']:.0%} of the goal's words"
        )
        return f"{reason} -> {option.name}" + (f" ({argument})" if argument else "")

    def _pass_rationale(self, observation: Any) -> str:
        feats = self.featurizer(observation).stats
        if hasattr(self.featurizer, "rationale"):
            return str(self.featurizer.rationale(feats))
        return "the slow path sees nothing worth a note"

    def sample_slow(
        self, observation: Any, n: int, generator: torch.Generator, greedy: bool = False
    ) -> list[SlowSample]:
        with torch.no_grad():
            h, option_logp, spans = self._distributions(observation)
            samples = []
            for _ in range(n):
                if greedy:
                    pos = int(option_logp.argmax())
                else:
                    pos = int(torch.multinomial(option_logp.exp().to(generator.device), 1, generator=generator))
                if pos == len(self.options):  # the slow path's pass (slow_pass=True only): no note is sent
                    samples.append(
                        SlowSample(
                            None,
                            "",
                            PASS_TEXT,
                            f"{self._pass_rationale(observation)} -> pass",
                            {"option_pos": pos, "arg_pos": -1, "spans": spans},
                        )
                    )
                    continue
                option = self.options[pos]
                arg_pos, argument = -1, ""
                if option.needs_argument and self.choose_arguments:
                    arg_logp = torch.log_softmax(self._argument_logits(observation, h, pos, spans), dim=-1)
                    arg_pos = (
                        int(arg_logp.argmax())
                        if greedy
                        # the caller's (CPU) generator draws on its device
                        else int(torch.multinomial(arg_logp.exp().to(generator.device), 1, generator=generator))
                    )
                    argument = spans[arg_pos]
                samples.append(
                    SlowSample(
                        option,
                        argument,
                        option.render(observation, argument),
                        self._rationale(observation, option, argument),
                        {"option_pos": pos, "arg_pos": arg_pos, "spans": spans},
                    )
                )
        return samples

    def slow_logprobs(self, observation: Any, samples: Sequence[SlowSample]) -> torch.Tensor:
        h, option_logp, spans = self._distributions(observation)
        out = []
        arg_cache: dict[int, torch.Tensor] = {}
        for s in samples:
            pos = s.payload["option_pos"]
            lp = option_logp[pos]
            if s.payload["arg_pos"] >= 0:
                if pos not in arg_cache:
                    arg_cache[pos] = torch.log_softmax(self._argument_logits(observation, h, pos, spans), dim=-1)
                lp = lp + arg_cache[pos][s.payload["arg_pos"]]
            out.append(lp)
        return torch.stack(out)
