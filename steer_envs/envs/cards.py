"""Env cards: one Markdown page per registered environment id, generated from the code.

Why generated: a hand-written page drifts the first time a space, an option or the simulator changes. A card is
built from what the code says: the registry entry, the constructor signature and its defaults, the spaces (in
every action mode), the catalogue of discrete actions, the documented reward, observation and ``info`` keys
(``reward_doc`` / ``observation_docs`` / ``info_docs`` on the env class; the options, their defaults and
docs from its config dataclass, ``config_class``, e.g. :class:`~.base.EnvConfig`), and a sample episode
played with a fixed seed and a fixed policy and rendered as text. ``steer-envs cards`` writes them to
``docs/envs/``; ``tests/envs/test_cards.py`` fails when a registered id has no card or its card is stale.

Nothing here is specific to one env: every id registered under the ``steer_envs/`` namespace gets a card, so an
env added later is documented by the same command.
"""

from __future__ import annotations

import dataclasses
import inspect
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np

from .registration import NAMESPACE
from .task_env import ACTION_MODES

SAMPLE_SEED = 0
SAMPLE_MAX_STEPS = 40
SNIPPET_CHARS = 700
#: options the sample episode is played with when the env accepts them (dev split: never the test split)
SAMPLE_OPTIONS: dict[str, Any] = {"split": "dev"}

VERSIONING = """The suffix `-v0` versions the env's *behaviour*: the observations, rewards and episode ends that a seed,
the options and the data produce. A change that alters them (a simulator change, a new reward term, a different
observation) registers the next version (`-v1`), and the old id stays registered while results that used it are
reported. New options with defaults that keep the old behaviour, and new `info` keys, do not bump the version.
This card's sample episode is regenerated from the code (`steer-envs cards`); `tests/envs/test_cards.py` fails
when it no longer matches, which is the moment to decide whether the change needs a new version."""


def registered_ids() -> list[str]:
    """Every id registered under the ``steer_envs/`` namespace, sorted."""
    import steer_envs  # noqa: F401  (registers the ids)

    return sorted(env_id for env_id in gym.registry if env_id.startswith(f"{NAMESPACE}/"))


def card_filename(env_id: str) -> str:
    return env_id.split("/", 1)[1] + ".md"


# -- pieces ----------------------------------------------------------------------------------------------------
def _env_class(spec: gym.envs.registration.EnvSpec):
    entry = spec.entry_point
    if callable(entry):
        return entry
    from ..registry import import_object

    assert entry is not None, f"{spec.id} has no entry point"
    return import_object(entry)


def _option_fields(creator) -> list[tuple[str, Any, str, str | None]]:
    """(name, default, annotation, doc) of each option: the env's config dataclass (``config_class``, whose field
    metadata holds the docs) when it has one, else the constructor's keyword parameters (doc: None)."""
    config_class = getattr(creator, "config_class", None) if inspect.isclass(creator) else None
    if config_class is not None and dataclasses.is_dataclass(config_class):

        def default(f: dataclasses.Field) -> Any:
            if f.default is not dataclasses.MISSING:
                return f.default
            if f.default_factory is not dataclasses.MISSING:
                return f.default_factory()
            return inspect.Parameter.empty

        return [(f.name, default(f), str(f.type), f.metadata.get("doc")) for f in dataclasses.fields(config_class)]
    target = creator.__init__ if inspect.isclass(creator) else creator
    rows: list[tuple[str, Any, str, str | None]] = []
    for name, param in inspect.signature(target).parameters.items():
        if name == "self" or param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            continue
        annotation = "" if param.annotation is inspect.Parameter.empty else str(param.annotation)
        rows.append((name, param.default, annotation, None))
    return rows


def _options(creator, spec) -> list[tuple[str, str, str, str]]:
    """(name, default, annotation, doc) of the env's keyword options; registry kwargs override defaults. The doc
    comes from the config field's metadata, else from the class's ``option_docs``."""
    legacy_docs = dict(getattr(creator, "option_docs", {}) or {})
    rows = []
    for name, default, annotation, doc in _option_fields(creator):
        default = spec.kwargs.get(name, default)
        shown = "required" if default is inspect.Parameter.empty else f"`{default!r}`"
        rows.append((name, shown, annotation.replace("|", "\\|"), doc or legacy_docs.get(name, "(undocumented)")))
    return rows


def _accepts(creator, name: str) -> bool:
    return any(option == name for option, *_ in _option_fields(creator))


def _space_rows(space: gym.Space) -> list[tuple[str, str]]:
    if isinstance(space, gym.spaces.Dict):
        return [(key, repr(sub)) for key, sub in space.spaces.items()]
    return [("", repr(space))]


def _clip(text: str, limit: int = SNIPPET_CHARS) -> str:
    text = str(text)
    if len(text) <= limit:
        return text
    return text[: limit // 2] + f" [… {len(text) - limit} characters …] " + text[-limit // 2 :]


def _plain(value: Any) -> Any:
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, float):
        return round(value, 4)
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


def _sample_action(env: gym.Env, step: int) -> Any:
    """The card's fixed policy: pass, except one intervention (catalogue index 1) at the second decision."""
    space = env.action_space
    if isinstance(space, gym.spaces.Discrete):
        return int(space.start) + (1 if step == 1 and space.n > 1 else 0)
    if isinstance(space, gym.spaces.Text):
        catalogue = getattr(env.unwrapped, "catalogue", None)
        if step == 1 and catalogue and len(catalogue) > 1:
            return catalogue[1].template if "{" not in catalogue[1].template else "pass"
        return "pass"
    space.seed(SAMPLE_SEED + step)
    return space.sample()


def _describe_obs(obs: Any, previous: Any) -> list[str]:
    if not isinstance(obs, dict):
        return [f"    observation: {_clip(repr(_plain(obs)))}"]
    lines = []
    for key, value in obs.items():
        old = previous.get(key) if isinstance(previous, dict) else None
        if isinstance(value, str):
            if isinstance(old, str) and value == old:
                continue
            if isinstance(old, str) and old and value.startswith(old):
                lines.append(f"    {key} (appended): {_clip(value[len(old) :])!r}")
            else:
                lines.append(f"    {key}: {_clip(value)!r}")
        else:
            if old is not None and _plain(old) == _plain(value):
                continue
            lines.append(f"    {key}: {_plain(value)!r}")
    return lines


@dataclass
class SampleEpisode:
    text: str
    info_keys: list[str]


def _sample_episode(env_id: str, creator) -> SampleEpisode:
    options = {k: v for k, v in SAMPLE_OPTIONS.items() if _accepts(creator, k)}
    render_mode = "ansi" if "ansi" in getattr(creator, "metadata", {}).get("render_modes", []) else None
    env = gym.make(env_id, render_mode=render_mode, **options) if render_mode else gym.make(env_id, **options)
    shown = ", ".join(f"{k}={v!r}" for k, v in options.items())
    made = ", ".join(
        [repr(env_id)] + ([shown] if shown else []) + ([f"render_mode={render_mode!r}"] if render_mode else [])
    )
    lines = [
        f"gymnasium.make({made})",
        f"reset(seed={SAMPLE_SEED}); policy: action 0 (pass, where there is a catalogue), action 1 at step 2",
        "",
    ]
    obs, info = env.reset(seed=SAMPLE_SEED)
    info_keys = set(info)
    lines.append("reset")
    lines += _describe_obs(obs, None)
    previous = obs
    total = 0.0
    for step in range(SAMPLE_MAX_STEPS):
        action = _sample_action(env, step)
        obs, reward, terminated, truncated, info = env.step(action)
        info_keys |= set(info)
        total += float(reward)
        lines.append(
            f"step {step + 1}: action {action!r} -> reward {float(reward):g}"
            + (", terminated" if terminated else "")
            + (", truncated" if truncated else "")
        )
        lines += _describe_obs(obs, previous)
        previous = obs
        if terminated or truncated:
            break
    lines.append("")
    lines.append(f"return {total:g}; final info:")
    for key, value in _plain(info).items():
        lines.append(f"    {key}: {_clip(repr(value), 300)}")
    if render_mode == "ansi":
        lines += ["", "render() at the end:", ""]
        lines += ["    " + line for line in _clip(str(env.render() or ""), 2000).splitlines()]
    env.close()
    return SampleEpisode("\n".join(lines), sorted(info_keys))


def _table(header: tuple[str, ...], rows: Sequence[tuple[str, ...]]) -> list[str]:
    out = ["| " + " | ".join(header) + " |", "| " + " | ".join("---" for _ in header) + " |"]
    out += ["| " + " | ".join(cell.replace("\n", " ") for cell in row) + " |" for row in rows]
    return out


def _doc(text: str | None) -> str:
    return inspect.cleandoc(text) if text else ""


# -- the card --------------------------------------------------------------------------------------------------
def _search_profile_rows() -> list[tuple[str, str]]:
    from ..executors.sim.profile import load_profile, shipped_profiles

    return [(f"`sim:{name}`", load_profile(name).description) for name in shipped_profiles()]


def _pipeline_profile_rows() -> list[tuple[str, str]]:
    from ..executors.pipeline import load_pipeline_profile, shipped_profiles

    return [(f"`sim:{name}`", load_pipeline_profile(name).description) for name in shipped_profiles()]


#: an env's ``simulator`` (class attribute) -> the shipped ``sim:`` profiles it can be made with
SIMULATOR_PROFILES: dict[str, Callable[[], list[tuple[str, str]]]] = {
    "search": _search_profile_rows,
    "pipeline": _pipeline_profile_rows,
}


def _profile_rows(creator: Any) -> list[tuple[str, str]]:
    """The shipped ``sim:`` profiles the env accepts, each with its own description (a synthetic one says so there),
    so a card shows which executors an env can be made with out of the box, and no profile it refuses."""
    return SIMULATOR_PROFILES[getattr(creator, "simulator", "search")]()


def build_card(env_id: str) -> str:
    """The Markdown card of one registered id (deterministic: the same code and data give the same text)."""
    from .. import __version__

    spec = gym.registry[env_id]
    creator = _env_class(spec)
    docs = lambda name: dict(getattr(creator, name, {}) or {})  # noqa: E731
    lines = [f"# `{env_id}`", ""]
    summary = _doc(creator.__doc__ if inspect.isclass(creator) else getattr(creator, "__doc__", ""))
    module_doc = _doc(inspect.getmodule(creator).__doc__ if inspect.getmodule(creator) else "")
    if module_doc:
        lines += [module_doc.split("\n\n")[0], ""]
    if summary:
        lines += [summary, ""]
    lines += _table(
        ("", ""),
        [
            ("entry point", f"`{spec.entry_point if isinstance(spec.entry_point, str) else creator.__qualname__}`"),
            ("registered kwargs", f"`{dict(spec.kwargs)!r}`"),
            ("nondeterministic", str(spec.nondeterministic)),
            ("max_episode_steps", str(spec.max_episode_steps)),
        ],
    )

    options = {k: v for k, v in SAMPLE_OPTIONS.items() if _accepts(creator, k)}
    env = gym.make(env_id, **options)
    obs_docs, info_docs = docs("observation_docs"), docs("info_docs")
    lines += ["", "## Observation space", "", f"`{env.observation_space!r}`", ""]
    lines += _table(
        ("key", "space", "meaning"),
        [
            (f"`{k}`" if k else "", f"`{v}`", obs_docs.get(k, "(undocumented)"))
            for k, v in _space_rows(env.observation_space)
        ],
    )
    lines += ["", "## Action space", ""]
    mode_rows = []
    if _accepts(creator, "action_mode"):
        for mode in ACTION_MODES:
            with gym.make(env_id, action_mode=mode, **options) as moded:
                mode_rows.append((f"`{mode}`", f"`{moded.action_space!r}`"))
        lines += _table(("action_mode", "space"), mode_rows)
    else:
        lines += [f"`{env.action_space!r}`"]
    catalogue = getattr(env.unwrapped, "catalogue", None)
    if catalogue:
        lines += [
            "",
            "Discrete actions (`env.unwrapped.catalogue`; in text mode, any note, or the pass words "
            f"{sorted(getattr(env.unwrapped, 'pass_words', ()))}):",
            "",
        ]
        lines += _table(
            ("index", "name", "kind", "text sent", "what it is for"),
            [
                (str(i), f"`{t.name}`", t.kind, f"`{t.template}`" if t.template else "", t.description)
                for i, t in enumerate(catalogue)
            ],
        )
    env.close()

    lines += ["", "## Reward", "", getattr(creator, "reward_doc", None) or "(undocumented)"]
    sample = _sample_episode(env_id, creator)
    info_keys = list(dict.fromkeys([*info_docs, *sample.info_keys]))
    lines += ["", "## `info` keys", ""]
    lines += _table(
        ("key", "meaning", "seen in the sample episode"),
        [(f"`{k}`", info_docs.get(k, "(undocumented)"), "yes" if k in sample.info_keys else "no") for k in info_keys],
    )
    lines += ["", "## Options (keyword arguments of `gymnasium.make`)", ""]
    lines += _table(
        ("option", "default", "type", "meaning"),
        [(f"`{n}`", d, f"`{a}`" if a else "", doc) for n, d, a, doc in _options(creator, spec)],
    )
    if _accepts(creator, "executor"):
        lines += ["", '## Shipped simulated executors (`executor="sim:<profile>"`)', ""]
        lines += _table(("profile", "what it is"), _profile_rows(creator))
    lines += ["", "## Versioning", "", VERSIONING]
    lines += ["", "## A sample episode", "", "```text", sample.text, "```", ""]
    lines += [f"*Generated by `steer-envs cards` from steer-envs {__version__}; do not edit by hand.*", ""]
    return "\n".join(lines)


def build_index(env_ids: list[str]) -> str:
    lines = [
        "# Environment cards",
        "",
        "One page per registered id, generated from the code by `steer-envs cards` "
        "(checked by `tests/envs/test_cards.py`).",
        "",
    ]
    for env_id in env_ids:
        spec = gym.registry[env_id]
        creator = _env_class(spec)
        first = (_doc(creator.__doc__).split("\n\n")[0] if creator.__doc__ else "").replace("\n", " ")
        lines.append(f"* [`{env_id}`]({card_filename(env_id)}): {first}")
    return "\n".join(lines) + "\n"


def expected_cards(env_ids: list[str] | None = None) -> dict[str, str]:
    """file name -> text, for every registered id and the index."""
    env_ids = registered_ids() if env_ids is None else env_ids
    cards = {card_filename(env_id): build_card(env_id) for env_id in env_ids}
    cards["README.md"] = build_index(env_ids)
    return cards


def stale_cards(folder: str | os.PathLike, env_ids: list[str] | None = None) -> list[str]:
    """Card files in ``folder`` that are missing or differ from what the code generates."""
    folder = Path(folder)
    stale = []
    for name, text in expected_cards(env_ids).items():
        path = folder / name
        if not path.is_file() or path.read_text(encoding="utf-8") != text:
            stale.append(name)
    return stale


def write_cards(folder: str | os.PathLike, env_ids: list[str] | None = None) -> list[Path]:
    from ..atomic import atomic_write_text

    folder = Path(folder)
    written = []
    for name, text in expected_cards(env_ids).items():
        atomic_write_text(folder / name, text)
        written.append(folder / name)
    return written
