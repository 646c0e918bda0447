"""Episode records and their JSONL log (re-exported): they live in :mod:`steer_envs.episodes`, the one home the
harness, the ACTGUIDE evaluation and the baselines share. This path keeps working for existing imports."""

from __future__ import annotations

from steer_envs.episodes import EpisodeLog, EpisodeRecord, read_episode_log, read_records

__all__ = ["EpisodeLog", "EpisodeRecord", "read_episode_log", "read_records"]
