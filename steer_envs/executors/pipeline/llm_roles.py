"""A pipeline role played by a language model (any ``steer_envs.llm`` backend spec, e.g. ``hf:gemma-3-270m``).

The role is prompted with its TacoMAS instruction, the goal, the message handed to it and any supervisor note or
rejection feedback, plus one example of the JSON it should write; its output is parsed leniently
(:func:`.messages.parse_message`: a verifier output without PASS/FAIL counts as FAIL). An LLM searcher writes the
*query*; the pipeline runs it on the real retriever and reports the retrieved sentences as its facts, so every
searcher's facts are real passage text. Sampling is seeded from the episode's generator where the backend
supports seeds, but LLM roles make the pipeline nondeterministic.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from ...llm.base import GenerationConfig
from ...llm.registry import make_backend
from .messages import Handoff

if TYPE_CHECKING:  # the pipeline as these functions use it, not pipeline.py (which imports this module)
    from .host import PipelineHost as Pipeline

INSTRUCTIONS: dict[str, str] = {
    "planner": "You are the planner of a research team. Split the question into sub-tasks for the searcher.",
    "searcher": "You are the searcher of a research team. Write one search query that finds the missing fact.",
    "reader": "You are the calculator/reader of a research team. Extract the answer value from the facts.",
    "verifier": (
        "You are the verifier of a research team. Check the claim against the facts; give a verdict PASS or FAIL."
    ),
    "summarizer": "You are the summarizer of a research team. Give the final answer in a few words.",
}
EXAMPLES: dict[str, dict[str, Any]] = {
    "planner": {
        "subtasks": [{"objective": "find the director of the film", "focus": "director", "role": "searcher"}],
        "reasoning": "The question needs the director first.",
    },
    "searcher": {"query": "director of the film Jaws"},
    "reader": {
        "variables": [{"name": "director", "value": "Steven Spielberg", "source": "Jaws (film)"}],
        "final_values": {"answer": "Steven Spielberg"},
    },
    "verifier": {"verdict": "PASS", "supported": ["Steven Spielberg (Jaws (film))"], "next_search_hint": ""},
    "summarizer": {"final_answer": "Steven Spielberg", "reasoning": "The facts name him as the director."},
}
MAX_INBOX_CHARS = 1200


class LLMRole:
    def __init__(self, role: str, spec: str, max_new_tokens: int = 64, temperature: float = 0.7) -> None:
        self.role = role
        self.spec = spec
        self.backend = make_backend(spec)
        self.config = GenerationConfig(
            max_new_tokens=max_new_tokens, temperature=temperature, top_p=0.95, stop=("\n\n",)
        )

    def prompt(self, goal: str, inbox: Handoff | None, note: str) -> str:
        parts = [INSTRUCTIONS[self.role], f"Question: {goal}"]
        if inbox is not None:
            parts.append(f"Message from the {inbox.sender}: {inbox.text[:MAX_INBOX_CHARS]}")
        if note:
            parts.append(f"Supervisor note: {note}")
        parts.append(f"Example output: {json.dumps(EXAMPLES[self.role])}")
        parts.append("Output (JSON):")
        return "\n".join(parts)

    def turn(self, p: Pipeline, inbox: Handoff | None) -> tuple[str, dict[str, Any]]:
        note = p.state.take_effects(self.role).get("note", "")
        seed = int(p.state.rng.integers(2**31 - 1))
        config = GenerationConfig(
            self.config.max_new_tokens, self.config.temperature, self.config.top_p, self.config.stop, seed
        )
        generation = self.backend.generate([self.prompt(p.current_task.question, inbox, note)], config)[0]
        text, fields = p.fields_from_text(self.role, generation.text.strip())
        return text or "{}", fields
