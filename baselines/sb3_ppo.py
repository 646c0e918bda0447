"""Stable-Baselines3 PPO on SearchSteering-v0 through the :class:`~steer_envs.wrappers.FeatureObservation` bridge.

This is the "plug in a standard RL library" baseline: PPO sees hashed text features plus counters (a fixed-size
vector) and picks a catalogue index. It learns *when* and *which* intervention from the terminal F1 alone, with
no counterfactual rollouts, which is what separates it from the steering trainer.

Command line (trains and saves ``model.zip``)::

    python -m baselines.sb3_ppo --timesteps 20000 --out runs/ppo
"""

from __future__ import annotations

import argparse
import json
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from steer_envs.cli.common import add_protocol_arguments
from steer_envs.cpu_threads import cpu_thread_default
from steer_envs.wrappers import FeatureObservation

from .base import MethodContext
from .options import MethodOptions, method_option

MODEL_FILE = "ppo_model.zip"


@dataclass(frozen=True)
class SB3PPOOptions(MethodOptions):
    timesteps: int = method_option(6000, "PPO training env steps", ge=1)
    buckets: int = method_option(128, "hashed feature buckets of the observation", ge=1)
    seed: int = method_option(0, "training seed")
    cost: float = method_option(0.0, "reward cost per intervention during training (the rate knob)")


class SB3Policy:
    """A trained SB3 model as a :class:`agents.base.Policy` over raw (Dict) observations."""

    name = "sb3_ppo"

    def __init__(self, model: Any, featurizer: Any, deterministic: bool = True, run_info: dict | None = None) -> None:
        self.model = model
        self.featurizer = featurizer
        self.deterministic = deterministic
        self.run_info = run_info or {}

    def reset(self, seed: int | None = None) -> None:
        pass

    def act(self, observation: Any, info: dict[str, Any]) -> int:
        from agents.steering.features import split_observation

        goal, transcript, turn, interventions = split_observation(observation)
        features = self.featurizer(goal, transcript, turn, interventions)
        action, _ = self.model.predict(features, deterministic=self.deterministic)
        return int(np.asarray(action).reshape(-1)[0])


class _ProgressCallback:
    """Builds an SB3 callback that logs episode returns to a JSONL file and advances a tqdm bar."""

    @staticmethod
    def make(total: int, log_path: Path | None, progress: bool):
        from stable_baselines3.common.callbacks import BaseCallback
        from tqdm.auto import tqdm

        class Callback(BaseCallback):
            def _on_training_start(self) -> None:
                self.bar = tqdm(
                    total=total, desc="train sb3_ppo", unit="step", disable=not progress, dynamic_ncols=True
                )
                self.returns: list[float] = []

            def _on_step(self) -> bool:
                self.bar.update(self.training_env.num_envs)
                for info, done in zip(self.locals.get("infos", []), self.locals.get("dones", [])):
                    if done:
                        self.returns.append(float(info.get("f1", 0.0)))
                        if log_path is not None and len(self.returns) % 20 == 0:
                            with open(log_path, "a", encoding="utf-8") as fh:
                                fh.write(
                                    json.dumps(
                                        {
                                            "method": "sb3_ppo",
                                            "step": self.num_timesteps,
                                            "episodes": len(self.returns),
                                            "f1": float(np.mean(self.returns[-20:])),
                                        }
                                    )
                                    + "\n"
                                )
                return True

            def _on_training_end(self) -> None:
                self.bar.close()

        return Callback()


def make_training_env(context: MethodContext, split: str = "train", buckets: int = 128, cost: float | None = None):
    """The featurised training env; ``cost`` (the method's rate knob) replaces the run's intervention cost."""
    overrides: dict[str, Any] = {} if cost is None else {"intervention_cost": cost}
    return FeatureObservation(context.make_env(split=split, action_mode="discrete", **overrides), buckets=buckets)


def _new_ppo(env, seed: int):
    from stable_baselines3 import PPO

    return PPO(
        "MlpPolicy",
        env,
        n_steps=256,
        batch_size=64,
        n_epochs=8,
        learning_rate=1e-3,
        gamma=1.0,
        gae_lambda=0.95,
        ent_coef=0.01,
        policy_kwargs={"net_arch": [64, 64]},
        seed=seed,
        device="cpu",
        verbose=0,
    )


def load_ppo(path: Path, context: MethodContext, seed: int, buckets: int):
    """The policy weights of a saved SB3 zip, read as tensors only (``policy.pth``, ``weights_only=True``).

    ``PPO.load`` would also unpickle the zip's ``data`` entry (cloudpickled schedules and classes), which runs
    code from the file; the architecture is fixed here, so the weights are all that is needed."""
    import io
    import pickle
    import zipfile

    import torch

    from steer_envs.checkpoints import CheckpointError

    try:
        with zipfile.ZipFile(path) as archive:
            state = torch.load(io.BytesIO(archive.read("policy.pth")), map_location="cpu", weights_only=True)
    except (zipfile.BadZipFile, KeyError, pickle.UnpicklingError, RuntimeError, EOFError) as exc:
        raise CheckpointError(
            f"refused to open {str(path)!r} as a PPO policy "
            f"({str(exc).splitlines()[0] if str(exc) else type(exc).__name__}); "
            "delete it and the method retrains"
        ) from None
    env = make_training_env(context, buckets=buckets)
    model = _new_ppo(env, seed)
    model.policy.load_state_dict(state)
    env.close()
    return model


def train_ppo(context: MethodContext, timesteps: int, seed: int = 0, buckets: int = 128, cost: float | None = None):
    """Train PPO for ``timesteps`` env steps on the train split (``cost`` per intervention in its reward); returns
    the SB3 model."""
    from stable_baselines3.common.logger import Logger

    cpu_thread_default()
    env = make_training_env(context, buckets=buckets, cost=cost)
    env.reset(seed=seed)
    model = _new_ppo(env, seed)
    # SB3's default logger makes a fresh SB3-<timestamp> folder in the system temp dir on every learn(); progress
    # goes to the run's own training log (the callback), so its logger writes nowhere
    model.set_logger(Logger(folder=None, output_formats=[]))
    callback = _ProgressCallback.make(timesteps, context.training_log, context.progress)
    model.learn(total_timesteps=timesteps, callback=callback)
    env.close()
    return model


def build_sb3_ppo(context: MethodContext) -> SB3Policy:
    """Train (or load from the method's checkpoint folder) and wrap as a policy."""
    chosen = context.options_of(SB3PPOOptions)
    timesteps, buckets, seed, cost = chosen.timesteps, chosen.buckets, chosen.seed, chosen.cost
    path = context.checkpoint_dir() / MODEL_FILE
    if path.is_file():
        model = load_ppo(path, context, seed, buckets)
    else:
        model = train_ppo(context, timesteps, seed=seed, buckets=buckets, cost=cost)
        model.save(path)
    featurizer = FeatureObservation(context.make_env(), buckets=buckets).featurizer
    return SB3Policy(
        model, featurizer, run_info={"timesteps": timesteps, "buckets": buckets, "seed": seed, "cost": cost}
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_protocol_arguments(parser, include=("executor",))
    parser.add_argument("--timesteps", type=int, default=6000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", required=True, help="folder for ppo_model.zip and the training log")
    args = parser.parse_args(argv)
    out = Path(args.out)
    context = MethodContext(
        executor=args.executor,
        workdir=out,
        training_log=out / "training.jsonl",
        options=SB3PPOOptions(timesteps=args.timesteps, seed=args.seed),
    )
    start = time.perf_counter()
    build_sb3_ppo(context)
    print(f"saved {out / MODEL_FILE} after {args.timesteps} steps in {time.perf_counter() - start:.0f}s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
