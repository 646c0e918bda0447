"""Prompt templates of LLM search executors (the text before the model's first turn).

* ``search-r1``: Search-R1's instruction, verbatim as in its recorded rollouts (``shared/data/trajectories``),
  for models trained on it (Search-R1 checkpoints) and instruct models.
* ``asearcher``: an ASearcher-style instruction: the same tags, with explicit guidance to plan, search step by
  step and check the evidence before answering (the executor setup of the steering paper).
* ``few-shot``: a short instruction plus two worked episodes, for small *base* models such as Gemma 3 270M,
  which follow demonstrations far better than instructions.

Templates are data in a registry: add one with :func:`register_prompt_template`.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import unknown_name


@dataclass(frozen=True)
class PromptTemplate:
    """``text`` is formatted with ``{question}``; the model's generation starts right after it.
    ``extra_stops`` end a turn besides ``</search>`` / ``</answer>`` (a base model that starts writing the next
    demonstration, ``"\nQuestion:"``, has finished its turn)."""

    name: str
    text: str
    description: str
    extra_stops: tuple[str, ...] = ()

    def render(self, question: str) -> str:
        return self.text.replace("{question}", question.strip())


SEARCH_R1_TEXT = (
    "Answer the given question. You must conduct reasoning inside <think> and </think> first every time you get "
    "new information. After reasoning, if you find you lack some knowledge, you can call a search engine by "
    "<search> query </search> and it will return the top searched results between <information> and "
    "</information>. You can search as many times as your want. If you find no further external knowledge needed, "
    "you can directly provide the answer inside <answer> and </answer>, without detailed illustrations. For "
    "example, <answer> Beijing </answer>. Question: {question}\n"
)

ASEARCHER_TEXT = (
    "You are a search agent answering a question with the help of a search engine over Wikipedia.\n"
    "Work in turns. In each turn, first think inside <think> and </think>: what is known so far, what is still "
    "missing, and which single fact to look up next. Then act, with exactly one of:\n"
    "- <search> query </search> to search; the top results come back between <information> and </information>;\n"
    "- <answer> final answer </answer> once the evidence supports it: a short span (a name, date or number), "
    "without explanation.\n"
    "Break multi-hop questions into single-hop searches, search again when results do not contain the fact, and "
    "check that the evidence really answers the question before you answer. Guidance from a supervisor may "
    "appear between <guidance> and </guidance>; take it into account.\n"
    "Question: {question}\n"
)

FEW_SHOT_TEXT = (
    "Answer each question by searching. Write a search as <search> query </search>; the results come back inside "
    "<information> and </information>. When you know the answer, write it as <answer> short answer </answer>.\n\n"
    "Question: In which country is the city where the Eiffel Tower stands?\n"
    "<think> The Eiffel Tower is in Paris. I should check which country Paris is in. </think>\n"
    "<search> Paris city country </search>\n\n"
    "<information>Doc 1(Title: Paris) Paris is the capital and largest city of France.</information>\n\n"
    "<think> Paris is in France. </think>\n"
    "<answer> France </answer>\n\n"
    "Question: Who wrote the novel Pride and Prejudice?\n"
    "<search> Pride and Prejudice novel author </search>\n\n"
    "<information>Doc 1(Title: Pride and Prejudice) Pride and Prejudice is an 1813 novel of manners by "
    "Jane Austen.</information>\n\n"
    "<answer> Jane Austen </answer>\n\n"
    "Question: {question}\n"
)

PROMPT_TEMPLATES: dict[str, PromptTemplate] = {}


def register_prompt_template(template: PromptTemplate) -> None:
    PROMPT_TEMPLATES[template.name] = template


register_prompt_template(PromptTemplate("search-r1", SEARCH_R1_TEXT, "Search-R1's instruction (verbatim)"))
register_prompt_template(
    PromptTemplate("asearcher", ASEARCHER_TEXT, "ASearcher-style instruction with planning and checking")
)
register_prompt_template(
    PromptTemplate("few-shot", FEW_SHOT_TEXT, "two worked episodes, for small base models", ("\nQuestion:",))
)


def get_prompt_template(name: str) -> PromptTemplate:
    if name not in PROMPT_TEMPLATES:
        raise unknown_name("prompt template", name, list(PROMPT_TEMPLATES))
    return PROMPT_TEMPLATES[name]
