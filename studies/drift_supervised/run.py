"""The supervised upper bound of the paper's steerer on ``sim:drift1``: its architecture, fitted on the ladder's
fork-measured gains.

The paper's trainer (ranking loss on q(s) labels for the fast path, GRPO for the slow path) gets little of the
margin between the best fixed rule and the learnable ceiling on ``sim:drift1``, and the component study
(``studies/drift_components``) finds the representation can read every common drift kind. This study asks the
remaining question: trained by plain regression on the data the learnable ceiling is fitted on, does the *same
architecture* (the RL row's encoder steerer: hashed n-grams and statistics, a shared encoder state, the fast head's
``z``, the slow head over the notes) reach the ceiling? If it does, the pipeline around the learning rule (what the
steerer reads, its gate, its slow path's note choice, the deployment) can; if it does not, the representation cannot.

* **Data**: the ladder's own protocol (``docs/results/drift/drift1/ladder.json``): on the *train* split, its train
  tasks (one episode each), its behaviour policy (pass on even-seeded episodes, a random note with probability 0.3
  on the others), and at every decision every note and pass sent on its forks (re-seeded, the same seeds for every
  action), then pass to the end: a note's gain is its mean F1 minus passing's
  (:func:`baselines.ladder.option_values`). The number of decisions matches the ladder's ``train_decisions``
  when the data are the ladder's.
* **Fit** (per training seed, which also seeds the initial weights): the slow head's output for each note regresses
  that note's gain; the fast head's ``z`` regresses the best note's gain (F1 points / 10). Adam at each learning rate
  of :data:`LEARNING_RATES`; the (learning rate, epoch) kept is the one with the lowest loss on a fifth of the train
  episodes held out. Two fits (:data:`FITS`): every weight trained, as the paper trains θ; and the n-gram table kept
  at its random initialisation (a fixed projection of the words), everything else trained: the table holds most of
  the weights, and with it a fit can memorise the train episodes' words instead of what generalises.
* **Deployment**, as the learnable ceiling is deployed (:class:`baselines.ladder.GainPolicy`): the gate opens when
  ``z`` exceeds a threshold, the slow path sends its most probable note, at most three notes an episode. The
  threshold is chosen on the ladder's dev tasks by the ladder's rule: from ``z``'s quantiles on the train states,
  the one whose dev rate is nearest the ladder's target rate (one note per task), the better dev F1 on a tie.
* **Test**: the ladder's test tasks and evaluation seeds through the harness, beside no supervision, the ladder's
  dev-chosen fixed rule and the hand-written rung (``studies/drift_tells``), with the harness's paired bootstrap
  over tasks and the training seeds. Its place on the ladder's scale is its gain over the fixed rule divided by the
  ceiling's (a point estimate: the ceiling's episodes are not committed).
* **Components**: on the dev states of the component study, each fit's ``z`` AUC for "a drift is under
  way" and how often its slow path picks the note that fits the kind, beside the RL steerer's.

Usage (from the repository root)::

    python -m studies.drift_supervised.run --out runs/drift_supervised

It resumes (the measured gains, the fitted steerers and the test episodes are kept in ``--out``), writes
``docs/results/drift/supervised/summary.json`` and ``episodes.jsonl.gz``, and prints the table. ``--quick`` runs a
tiny version for the tests.
"""

from __future__ import annotations

import argparse
import copy
import json
import pickle
import sys
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

from agents.steering.backbones import build_steerer
from agents.steering.interventions import InterventionOption, options_from_catalogue
from agents.steering.steerer import Steerer
from baselines.base import STEERING_ENV, MethodContext
from baselines.ladder import fork_seeds, option_values
from baselines.options import MethodOptions, method_option
from baselines.registry import METHODS, Method, register_method
from baselines.simple import PASS, NoSupervision, RandomIntervention
from benchmarks.harness.config import EvalConfig
from benchmarks.harness.ladder import BEHAVIOUR_P, MAX_INTERVENTIONS, THRESHOLD_QUANTILES
from benchmarks.harness.provenance import code_record, portable_command
from benchmarks.harness.results_summary import machine, now
from benchmarks.harness.runfolder import RunFolder
from benchmarks.harness.runner import evaluate
from benchmarks.harness.stats import RowRuns
from steer_envs.episodes import episode_seed, play_episode
from steer_envs.errors import SteerEnvsError
from steer_envs.failures import episode_failed
from steer_envs.paths import REPO_ROOT
from studies.drift_components.run import collect, labels, score_auc, slow_fit, states
from studies.drift_tells.rule import register as register_hand_written
from studies.drift_tells.run import ceiling_over_rule, ladder_of, specs_for
from studies.row_summaries import write_row_summary
from studies.rows import ladder_places, paired_rows

EXECUTOR = "sim:drift1"
#: the method name the study registers (the fitted steerer of one training seed, built by this study only)
NAME = "drift_supervised"
RESULTS = REPO_ROOT / "docs" / "results" / "drift" / "supervised"
#: the fit's learning rates (Adam); the held-out train loss chooses among them
LEARNING_RATES = (3e-3, 1e-3, 3e-4)
#: the gains are regressed in F1 points / 10 (gains are measured on F1's 0..1 scale)
TARGET_SCALE = 10.0
#: the component study's RL steerer, for the side-by-side figures
COMPONENTS = REPO_ROOT / "docs" / "results" / "drift" / "components" / "summary.json"
#: the fits: every weight trained (the paper's θ), or the n-gram table kept at its initialisation (a fixed random
#: projection of the words; everything else trained). Fit name -> whether the n-gram table is trained
FITS = {"supervised": True, "supervised_frozen_ngrams": False}
#: the rows of the test table and the paired differences reported: (row, reference)
ROWS = ("none", "best_fixed_rule", "hand_written", *FITS)
GAINS = (
    *((fit, reference) for fit in FITS for reference in ("none", "best_fixed_rule", "hand_written")),
    ("supervised_frozen_ngrams", "supervised"),
    ("hand_written", "best_fixed_rule"),
)


@dataclass(frozen=True)
class StudySetting:
    """What the study runs: the ladder's protocol (train tasks and forks, dev and test tasks, the target rate), the
    fit's budget and the training seeds."""

    train_tasks: int
    train_forks: int
    dev_limit: int
    dev_seeds: int
    limit: int
    seeds: int
    max_turns: int
    target: float
    train_seeds: int = 3
    epochs: int = 20
    batch: int = 64
    held_out: float = 0.2
    component_episodes: int = 300
    workers: int = 2

    @classmethod
    def of_ladder(cls, ladder: dict[str, Any], **overrides: Any) -> StudySetting:
        cfg = ladder["config"]
        fields = ("train_tasks", "train_forks", "dev_limit", "dev_seeds", "limit", "seeds", "max_turns", "target")
        return cls(**{**{name: cfg[name] for name in fields}, **overrides})


QUICK = {
    "train_tasks": 2,
    "dev_limit": 1,
    "limit": 1,
    "seeds": 1,
    "train_seeds": 2,
    "epochs": 2,
    "component_episodes": 6,
    "workers": 1,
}


# -- the data: the ladder's fork-measured gains, with the observations they were measured at --------------------------
def make_env(split: str, max_turns: int):
    import gymnasium as gym

    return gym.make(STEERING_ENV, executor=EXECUTOR, split=split, max_turns=max_turns)


def measure_episodes(items: list[tuple[str, int, int, int]]) -> list[tuple[dict[str, Any], np.ndarray, int]]:
    """(observation, every action's fork-measured F1, episode number) at every decision of each train episode
    ``(task id, env seed, forks, max turns)``, played by the ladder's behaviour policy."""
    from threadpoolctl import threadpool_limits

    threadpool_limits(1)
    if not items:
        return []
    env = make_env("train", items[0][3]).unwrapped
    options = options_from_catalogue(env.catalogue)
    actions = list(range(len(env.catalogue)))
    out = []
    for number, (task_id, seed, forks, _) in enumerate(items):
        behaviour = NoSupervision() if seed % 2 == 0 else RandomIntervention(options, BEHAVIOUR_P)
        observation, info = env.reset(seed=seed, options={"task_id": task_id})
        behaviour.reset(seed)
        done, decision = False, 0
        while not done:
            values = option_values(env, actions, fork_seeds(seed, decision, forks))
            if not np.isnan(values).any():
                out.append((copy.deepcopy(observation), values, number))
            observation, _, terminated, truncated, info = env.step(behaviour.act(observation, info))
            done, decision = terminated or truncated, decision + 1
    env.close()
    return out


@dataclass
class GainData:
    """The measured decisions: observations, each action's F1 (column 0: pass) and the train episode of each."""

    observations: list[dict[str, Any]]
    values: np.ndarray
    episodes: np.ndarray

    def gains(self, options: Sequence[InterventionOption]) -> np.ndarray:
        """Each note's gain over passing, in the order of ``options``."""
        return np.stack([self.values[:, o.index] - self.values[:, PASS] for o in options], axis=1)


def measure_gains(out: Path, setting: StudySetting, log: Callable[[str], None]) -> GainData:
    """The train decisions' gains (cached in ``out/gains.pkl``; measured in parts that a killed run keeps)."""
    path = out / "gains.pkl"
    if not path.is_file():
        config = EvalConfig(executor=EXECUTOR, split="train", seeds=1, limit=setting.train_tasks)
        items = [(t.id, episode_seed(t.id, 0), setting.train_forks, setting.max_turns) for t in config.tasks()]
        parts = out / "gains.parts"
        parts.mkdir(parents=True, exist_ok=True)
        size = max(1, -(-len(items) // 40))
        chunks = [items[i : i + size] for i in range(0, len(items), size)]
        todo = [i for i in range(len(chunks)) if not (parts / f"{i:03d}.pkl").is_file()]
        with ProcessPoolExecutor(setting.workers) if setting.workers > 1 else _InProcess() as pool:
            for i, measured in zip(todo, pool.map(measure_episodes, [chunks[i] for i in todo])):
                (parts / f"{i:03d}.pkl").write_bytes(pickle.dumps([(o, v, n + i * size) for o, v, n in measured]))
                log(f"  gains: part {i + 1} of {len(chunks)} measured ({len(measured)} decisions)")
        rows = [row for i in range(len(chunks)) for row in pickle.loads((parts / f"{i:03d}.pkl").read_bytes())]
        data = GainData([o for o, _, _ in rows], np.stack([v for _, v, _ in rows]), np.array([n for _, _, n in rows]))
        path.write_bytes(pickle.dumps(data))
    return pickle.loads(path.read_bytes())


class _InProcess:
    """``map`` in this process (the shape of a process pool, for one worker)."""

    def __enter__(self) -> _InProcess:
        return self

    def __exit__(self, *exc: Any) -> None:
        return None

    def map(self, fn: Callable[[Any], Any], items: Sequence[Any]):
        return map(fn, items)


# -- the fit ---------------------------------------------------------------------------------------------------------
class _CachedFeatures:
    """The steerer's featurizer with each observation's features kept (the fit reads every state every epoch)."""

    def __init__(self, featurizer: Callable[[Any], Any]) -> None:
        self.featurizer, self.cache = featurizer, {}

    def __call__(self, observation: Any) -> Any:
        key = id(observation)
        if key not in self.cache:
            self.cache[key] = self.featurizer(observation)
        return self.cache[key]


def fit(
    data: GainData, options: Sequence[InterventionOption], seed: int, setting: StudySetting, fit_name: str
) -> tuple[Steerer, dict[str, Any]]:
    """The RL row's architecture (its initial weights seeded by ``seed``) with the slow head regressing each note's
    gain and ``z`` the best note's. One fit per learning rate of :data:`LEARNING_RATES`; the (learning rate, epoch)
    with the lowest loss on the held-out train episodes is kept (fork-measured gains are noisy: the fit overfits
    them within a few epochs, and which learning rate gets furthest before it does is read from held-out data)."""
    rng = np.random.default_rng(seed)
    episodes = np.unique(data.episodes)
    held_episodes = set(rng.choice(episodes, max(1, round(setting.held_out * len(episodes))), replace=False).tolist())
    held = np.array([i for i, e in enumerate(data.episodes) if e in held_episodes])
    train = np.array([i for i, e in enumerate(data.episodes) if e not in held_episodes])
    targets = torch.from_numpy(TARGET_SCALE * data.gains(options)).float()
    featurizer = None
    best: tuple[float, float, int, dict[str, torch.Tensor]] | None = None
    curves = {}
    for lr in LEARNING_RATES:
        torch.manual_seed(seed)
        steerer = build_steerer("encoder", options, {"seed": seed})
        steerer.set_action_mode("discrete")
        featurizer = featurizer or _CachedFeatures(steerer.featurizer)
        steerer.featurizer = featurizer
        steerer.bag.weight.requires_grad_(FITS[fit_name])
        optimiser = torch.optim.Adam([p for p in steerer.parameters() if p.requires_grad], lr=lr)
        order_rng = np.random.default_rng([seed, 1])

        def loss_of(index: np.ndarray, steerer: Steerer = steerer) -> torch.Tensor:
            observations = [data.observations[i] for i in index]
            h = steerer.hidden_states(observations)
            y = targets[index]
            return torch.mean((steerer.option_head(h) - y) ** 2) + torch.mean(
                (steerer.fast_scores(observations) - y.max(dim=1).values) ** 2
            )

        curve = []
        for epoch in range(1, setting.epochs + 1):
            steerer.train()
            order = train[order_rng.permutation(len(train))]
            for start in range(0, len(order), setting.batch):
                optimiser.zero_grad()
                loss_of(order[start : start + setting.batch]).backward()
                optimiser.step()
            steerer.eval()
            with torch.no_grad():
                held_loss = float(loss_of(held))
            curve.append(round(held_loss, 4))
            if best is None or held_loss < best[0]:
                best = (held_loss, lr, epoch, copy.deepcopy(steerer.state_dict()))
        curves[str(lr)] = curve
    assert best is not None and featurizer is not None
    steerer = build_steerer("encoder", options, {"seed": seed})
    steerer.set_action_mode("discrete")
    steerer.load_state_dict(best[3])
    steerer.eval()
    with torch.no_grad():
        z = steerer.fast_scores([data.observations[i] for i in held]).numpy()
    best_gain = data.gains(options)[held].max(axis=1)
    return steerer, {
        "fit": fit_name,
        "seed": seed,
        "lr": best[1],
        "epoch": best[2],
        "held_out_loss": round(best[0], 4),
        "held_out_curves": curves,
        "held_out_states": int(len(held)),
        "held_out_z_best_gain_corr": round(float(np.corrcoef(z, best_gain)[0, 1]), 4) if len(held) > 2 else None,
    }


# -- deployment ------------------------------------------------------------------------------------------------------
class SupervisedSteerer:
    """The fitted steerer deployed as the learnable ceiling is: its slow path's most probable note when ``z``
    exceeds ``threshold``, at most :data:`~benchmarks.harness.ladder.MAX_INTERVENTIONS` notes an episode."""

    def __init__(self, steerer: Steerer, threshold: float, name: str = NAME) -> None:
        self.steerer, self.threshold, self.name = steerer, float(threshold), name
        self.run_info = {"threshold": round(self.threshold, 6), "reads": "the observation only"}
        self.generator = torch.Generator().manual_seed(0)
        self.reset()

    def reset(self, seed: int | None = None) -> None:
        self._sent = 0

    def act(self, observation: Any, info: dict[str, Any] | None = None) -> int:
        if self._sent >= MAX_INTERVENTIONS:
            return PASS
        with torch.no_grad():
            if float(self.steerer.fast_scores([observation])[0]) <= self.threshold:
                return PASS
            (sample,) = self.steerer.sample_slow(observation, 1, self.generator, greedy=True)
        self._sent += 1
        return sample.action_index


def dev_mean(policy: Any, setting: StudySetting) -> tuple[float, float]:
    """(macro mean F1 x100 over the benchmarks, notes per task) on the ladder's dev tasks and seeds."""
    config = EvalConfig(executor=EXECUTOR, split="dev", seeds=setting.dev_seeds, limit=setting.dev_limit)
    env = make_env("dev", setting.max_turns)
    f1: dict[str, list[float]] = {}
    notes = []
    for index in range(config.seeds):
        for task in config.tasks():
            _, _, info = play_episode(env, policy, episode_seed(task.id, index), task.id)
            if not episode_failed(info):
                f1.setdefault(task.benchmark, []).append(float(info["f1"]))
                notes.append(int(info["interventions"]))
    env.close()
    return 100 * float(np.mean([np.mean(v) for v in f1.values()])), float(np.mean(notes))


def choose_threshold(steerer: Steerer, data: GainData, setting: StudySetting) -> dict[str, Any]:
    """The ladder's rule: thresholds at quantiles of ``z`` over the train states (and zero), each evaluated on dev;
    the one whose rate is nearest the target, the better dev F1 on a tie."""
    with torch.no_grad():
        z = np.concatenate(
            [steerer.fast_scores(data.observations[i : i + 256]).numpy() for i in range(0, len(data.observations), 256)]
        )
    grid = sorted({0.0, *(round(float(np.quantile(z, q)), 5) for q in THRESHOLD_QUANTILES)})
    trials = []
    for threshold in grid:
        f1, rate = dev_mean(SupervisedSteerer(steerer, threshold), setting)
        trials.append({"threshold": threshold, "f1": round(f1, 3), "interventions": round(rate, 4)})
    chosen = min(trials, key=lambda t: (abs(t["interventions"] - setting.target), -t["f1"]))
    return {"chosen": chosen, "trials": trials}


@dataclass(frozen=True)
class SupervisedOptions(MethodOptions):
    """One fitted steerer (fitted and deployed by ``studies.drift_supervised.run``)."""

    seed: int = method_option(0, "training seed of the fit", ge=0)
    fit: str = method_option("supervised", "which fit: supervised (every weight) or supervised_frozen_ngrams")


#: (fit, training seed) -> the deployed steerer of this process (filled by :func:`main` before the harness builds it)
DEPLOYED: dict[tuple[str, int], SupervisedSteerer] = {}


def build(context: MethodContext) -> SupervisedSteerer:
    chosen = context.options_of(SupervisedOptions)
    key = (chosen.fit, chosen.seed)
    if key not in DEPLOYED:
        raise SteerEnvsError(
            f"{NAME}: no {chosen.fit} steerer fitted for seed {chosen.seed} in this process; run "
            "`python -m studies.drift_supervised.run`"
        )
    return DEPLOYED[key]


def register() -> None:
    """Register ``drift_supervised`` and the hand-written rung (once per process)."""
    register_hand_written()
    if NAME not in METHODS:
        register_method(
            Method(
                name=NAME,
                help="the steerer architecture fitted on the ladder's fork-measured gains (a study's bound)",
                env_id=STEERING_ENV,
                build=build,
                options=SupervisedOptions,
                group="rule",
            )
        )


# -- the test rows and the summary -----------------------------------------------------------------------------------
def test_rows(folder: RunFolder, ladder: dict[str, Any], seeds: Sequence[int], progress: bool) -> dict[str, RowRuns]:
    """Each row's episodes on the ladder's test tasks (each fit's row: one run per training seed)."""
    specs = specs_for(ladder)
    rows = {}

    def log(line: str) -> None:
        print(line, file=sys.stderr)

    for row in ("none", "best_fixed_rule", "hand_written"):
        outcome = evaluate(folder, specs[row], progress=progress, log=log)
        rows[row] = RowRuns(row, {outcome.label: outcome.records})
    for fit_name in FITS:
        runs = {}
        for seed in seeds:
            outcome = evaluate(folder, f"{NAME}:seed={seed},fit={fit_name}", progress=progress, log=log)
            runs[outcome.label] = outcome.records
        rows[fit_name] = RowRuns(fit_name, runs)
    return rows


def measure(rows: dict[str, RowRuns], benchmarks: Sequence[str]) -> dict[str, Any]:
    """Each row's figures and the :data:`GAINS` with their intervals and verdicts."""
    return paired_rows(rows, benchmarks, GAINS)


def components(steerers: dict[str, Sequence[Steerer]], episodes: int) -> dict[str, Any]:
    """Each fit's fast and slow paths on the component study's dev states (per seed, and the mean over seeds),
    beside the RL steerer's figures from that study's committed summary."""
    observations, kinds, _ = collect(episodes)
    drifting = labels(kinds, "any_drift")
    rl = json.loads(COMPONENTS.read_text(encoding="utf-8")) if COMPONENTS.is_file() else {}
    out: dict[str, Any] = {
        "states": len(observations),
        "rl": {
            "fast_path_auc": rl.get("fast_path_auc", {}).get("trained"),
            "slow_path_fits": {kind: rec["fits"] for kind, rec in rl.get("slow_path", {}).items()},
        },
    }
    for fit_name, fitted in steerers.items():
        aucs = [score_auc(states(steerer, observations)[1], drifting) for steerer in fitted]
        fits = [slow_fit(steerer, observations, kinds) for steerer in fitted]
        out[fit_name] = {
            "fast_path_auc": aucs,
            "fast_path_auc_mean": None if None in aucs else round(float(np.mean(aucs)), 4),
            "slow_path_fits": {
                kind: None
                if fits[0][kind]["fits"] is None
                else round(float(np.mean([f[kind]["fits"] for f in fits])), 4)
                for kind in fits[0]
            },
        }
    return out


def table(result: dict[str, Any]) -> str:
    rows, gains = result["rows"], result["gains"]
    lines = ["| row | F1 | notes / task | runs |", "| --- | ---: | ---: | ---: |"]
    lines += [f"| {r} | {v['f1']:.2f} | {v['interventions_per_task']:.2f} | {v['runs']} |" for r, v in rows.items()]
    lines += ["", "| difference | mean [95% CI] | verdict |", "| --- | --- | --- |"]
    lines += [
        f"| {k} | {g['mean']:+.2f} [{g['low']:+.2f}, {g['high']:+.2f}] | {g['verdict']} |" for k, g in gains.items()
    ]
    lines.append("")
    for fit_name, place in result["place"].items():
        lines.append(
            f"{fit_name}: place between the fixed rule (0) and the ceiling (1): "
            f"{'—' if place is None else f'{place:.2f}'}"
        )
    return "\n".join(lines)


def build_parser() -> argparse.ArgumentParser:
    """The study's command line (a committed summary's recorded command must still parse with it)."""
    parser = argparse.ArgumentParser(
        prog="python -m studies.drift_supervised.run", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("--out", type=Path, required=True, help="gains, fits and test episodes (resumable)")
    parser.add_argument("--train-seeds", type=int, default=3, help="training seeds of the fit")
    parser.add_argument("--workers", type=int, default=2, help="processes that measure the gains")
    parser.add_argument("--summary", type=Path, default=RESULTS, help="where summary.json and the episodes go")
    parser.add_argument("--quick", action="store_true", help="a tiny run (a few tasks, one seed): tests")
    parser.add_argument("--no-progress", action="store_true")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    start = time.time()
    register()
    ladder = ladder_of(EXECUTOR)
    if ladder is None:
        raise SteerEnvsError(f"{NAME}: the study needs the committed ladder of {EXECUTOR}")
    overrides = {**(QUICK if args.quick else {}), "workers": 1 if args.quick else args.workers}
    if not args.quick:
        overrides["train_seeds"] = args.train_seeds
    setting = StudySetting.of_ladder(ladder, **overrides)
    args.out.mkdir(parents=True, exist_ok=True)

    def log(line: str) -> None:
        print(line, file=sys.stderr)

    data = measure_gains(args.out, setting, log)
    log(f"  gains: {len(data.observations)} decisions (the ladder measured {ladder['choices'].get('train_decisions')})")
    env = make_env("train", setting.max_turns)
    options = options_from_catalogue(env.unwrapped.catalogue)
    env.close()
    fits: list[dict[str, Any]] = []
    steerers: dict[str, list[Steerer]] = {fit_name: [] for fit_name in FITS}
    for fit_name in FITS:
        for seed in range(setting.train_seeds):
            path = args.out / f"{fit_name}-{seed}.pkl"
            if not path.is_file():
                steerer, info = fit(data, options, seed, setting, fit_name)
                info["threshold"] = choose_threshold(steerer, data, setting)
                path.write_bytes(pickle.dumps((steerer.state_dict(), info)))
            state, info = pickle.loads(path.read_bytes())
            steerer = build_steerer("encoder", options, {"seed": seed})
            steerer.load_state_dict(state)
            steerer.set_action_mode("discrete")
            steerer.eval()
            DEPLOYED[(fit_name, seed)] = SupervisedSteerer(steerer, info["threshold"]["chosen"]["threshold"], fit_name)
            fits.append(info)
            steerers[fit_name].append(steerer)
            log(f"  {fit_name} seed {seed}: lr {info['lr']}, epoch {info['epoch']}, dev {info['threshold']['chosen']}")
    folder = RunFolder(
        args.out / "test", EvalConfig(executor=EXECUTOR, split="test", seeds=setting.seeds, limit=setting.limit)
    )
    rows = test_rows(folder, ladder, range(setting.train_seeds), not args.no_progress)
    result = measure(rows, folder.config.benchmarks)
    ceiling = ceiling_over_rule(ladder)
    result["place"] = ladder_places(result["gains"], list(FITS), ceiling)
    result["ceiling_over_rule"] = ceiling
    summary = {
        "command": portable_command(
            "python -m studies.drift_supervised.run", list(argv if argv is not None else sys.argv[1:])
        ),
        "written": now(),
        "machine": machine(),
        "seconds": round(time.time() - start, 1),
        "executor": EXECUTOR,
        "setting": asdict(setting),
        "train_decisions": len(data.observations),
        "ladder_train_decisions": ladder["choices"].get("train_decisions"),
        "fits": fits,
        **result,
        "components": components(steerers, setting.component_episodes),
        "config": folder.config.to_json(),
        "code": code_record([args.out / "test"]),
    }
    written = write_row_summary(args.summary, summary, rows)
    print(table(result))
    print(f"wrote {written}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
