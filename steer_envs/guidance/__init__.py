"""Action data for ACTGUIDE-RL: reference action sequences, the hint text, noise injection.

``load_action_data(...).reference(task_id)`` gives a :class:`ReferenceSequence` (a successful real rollout's
queries and answer, or the task's gold structure); :func:`format_hint` turns its first ``k`` actions into the
plan that ``GuidedSearch-v0`` puts in the prompt.
"""
from .hint import HINT_HEADER, format_hint, hint_lines, parse_hint
from .noise import distractor_titles, inject_noise
from .records import ACTION_NAMES, ANSWER, SEARCH, GuidanceAction, ReferenceSequence
from .sources import from_gold, from_rollout, from_rollouts
from .store import SOURCE_KINDS, ActionData, load_action_data, source_kind

__all__ = [
    "ACTION_NAMES", "ANSWER", "HINT_HEADER", "SEARCH", "SOURCE_KINDS", "ActionData", "GuidanceAction",
    "ReferenceSequence", "distractor_titles", "format_hint", "from_gold", "from_rollout", "from_rollouts",
    "hint_lines", "inject_noise", "load_action_data", "parse_hint", "source_kind",
]
