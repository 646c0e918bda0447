"""Env cards (docs/envs/) are generated from the code and cannot drift: every registered id has an up-to-date
card, an id registered later gets one from the same command, and every documented field is documented."""

from __future__ import annotations

from pathlib import Path

import gymnasium as gym
import pytest

from steer_envs.cli.main import main
from steer_envs.envs.cards import build_card, card_filename, registered_ids, stale_cards, write_cards

CARDS = Path(__file__).resolve().parents[2] / "docs" / "envs"


def test_every_registered_id_has_an_up_to_date_card(shared_data_dir):
    stale = stale_cards(CARDS)
    assert not stale, f"stale or missing env cards: {stale}; regenerate with `steer-envs cards` and commit docs/envs"
    index = (CARDS / "README.md").read_text(encoding="utf-8")
    for env_id in registered_ids():
        assert f"({card_filename(env_id)})" in index


@pytest.mark.parametrize("env_id", registered_ids())
def test_cards_document_every_space_key_info_key_and_option(env_id, shared_data_dir):
    card = (CARDS / card_filename(env_id)).read_text(encoding="utf-8")
    for section in (
        "## Observation space",
        "## Action space",
        "## Reward",
        "## `info` keys",
        "## Options",
        "## Versioning",
        "## A sample episode",
    ):
        assert section in card
    assert "(undocumented)" not in card, (
        f"{env_id}: document it in the env class (reward_doc, observation_docs, info_docs, option_docs)"
    )


class _Counter(gym.Env):
    """A later env: counts to three."""

    observation_space = gym.spaces.Discrete(4)
    action_space = gym.spaces.Discrete(2)
    reward_doc = "1 at the third step"
    info_docs = {"count": "steps so far"}

    def __init__(self, start: int = 0) -> None:
        self.count = start

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.count = 0
        return self.count, {"count": self.count}

    def step(self, action):
        self.count += 1
        return self.count, float(self.count == 3), self.count == 3, False, {"count": self.count}


def test_an_id_registered_later_gets_its_card_from_the_same_command(tmp_path, shared_data_dir):
    env_id = "steer_envs/Counter-v0"
    gym.register(env_id, entry_point=_Counter)
    try:
        assert env_id in registered_ids()
        assert card_filename(env_id) in stale_cards(tmp_path)  # missing: the check names it
        assert main(["cards", "--out", str(tmp_path), "--check"]) == 2
        write_cards(tmp_path)
        assert stale_cards(tmp_path) == []
        card = (tmp_path / "Counter-v0.md").read_text(encoding="utf-8")
        assert "`Discrete(4)`" in card and "1 at the third step" in card and "| `start` | `0` |" in card
        assert "step 3: action 0 -> reward 1, terminated" in card and card == build_card(env_id)
    finally:
        del gym.registry[env_id]


def test_cards_check_command(capsys, shared_data_dir):
    assert main(["cards", "--check", "--out", str(CARDS)]) == 0
    assert "up to date" in capsys.readouterr().out


def test_a_card_lists_every_shipped_simulated_executor_with_its_own_words():
    from steer_envs.envs.cards import build_card
    from steer_envs.executors.sim.profile import load_profile, shipped_profiles

    card = build_card("steer_envs/SearchSteering-v0")
    for name in shipped_profiles():
        assert f"| `sim:{name}` | {load_profile(name).description} |" in card
    assert "| `sim:drift2` | Synthetic (not calibrated to recordings)" in card


def test_the_handoff_card_lists_the_pipeline_profiles_it_takes_and_not_the_searchers(shared_data_dir):
    """The hand-off env runs the simulated pipeline: its card lists the pipeline's profiles (each makes the env), and
    a searcher profile, listed on the search envs' cards, is refused by it."""
    import re

    from steer_envs.errors import SteerEnvsError
    from steer_envs.executors.pipeline import load_pipeline_profile, shipped_profiles

    card = build_card("steer_envs/HandoffSteering-v0")
    listed = re.findall(r"^\| `sim:([a-z0-9_]+)` \|", card.split("## Shipped simulated executors")[-1], re.M)
    assert listed == shipped_profiles() and "`sim:drift1`" not in card
    for name in listed:
        assert f"| `sim:{name}` | {load_pipeline_profile(name).description} |" in card
        gym.make("steer_envs/HandoffSteering-v0", executor=f"sim:{name}", split="dev").close()
    with pytest.raises(SteerEnvsError, match="pipeline profile"):
        gym.make("steer_envs/HandoffSteering-v0", executor="sim:drift1", split="dev")
