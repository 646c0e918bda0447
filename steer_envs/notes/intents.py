"""Intent sets: what a supervisor's note can mean to a simulated agent, each intent given by example sentences.

An intent is defined by *prototypes* (sentences that mean it) rather than keywords: the reader embeds a note and
compares it with every prototype, so "don't answer yet, there is more to find" and "the evidence so far does not
answer the question" land on the same intent although they share no word. The ``none`` prototypes are notes that
ask for nothing an agent could act on (small talk, praise, noise); a note nearest to them, or far from everything,
reads as not actionable.

Intent sets are registered by name so that each simulated component reads notes against its own vocabulary (the
single searcher here; pipeline roles register theirs). Prototypes were chosen on a development list of
paraphrases (``tests/notes/paraphrases_dev.py``); the accuracy check runs on a separate list written for the test.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import unknown_name

NONE = "none"


@dataclass(frozen=True)
class IntentSpec:
    """One intent: its name, what it asks for, and sentences that mean it. ``takes_argument``: the note may carry
    a payload the agent uses (a query to search for)."""

    name: str
    description: str
    prototypes: tuple[str, ...]
    takes_argument: bool = False


@dataclass(frozen=True)
class IntentSet:
    name: str
    intents: tuple[IntentSpec, ...]

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(i.name for i in self.intents)

    def __getitem__(self, name: str) -> IntentSpec:
        for spec in self.intents:
            if spec.name == name:
                return spec
        raise unknown_name("intent", name, self.names)


_NOT_ACTIONABLE = IntentSpec(
    NONE,
    "asks for nothing an agent could act on",
    (
        "Hello there.",
        "Nice work so far.",
        "Thanks!",
        "The weather is lovely today.",
        "I like turtles.",
        "Good morning, how are you?",
        "asdf qwerty zxcv",
        "Interesting.",
        "Keep up the good work.",
        "OK.",
        "lorem ipsum dolor sit amet",
        "What a great day for a picnic.",
    ),
)


def _composed(firsts: tuple[str, ...], seconds: tuple[str, ...]) -> tuple[str, ...]:
    """Every "first. second" pair: notes that say what to stop and what to do, in both orders of negation."""
    return tuple(f"{a} {b}" for a in firsts for b in seconds)


#: "stop searching, answer" and "don't answer, search" share most words; MiniLM's embeddings of the two are close.
#: Composed prototypes of both give the probe many examples of which half carries the negation.
_STOP_SEARCHING = (
    "Stop searching.",
    "Don't search anymore.",
    "No more searching.",
    "Enough searching.",
    "You don't need another search.",
    "Searching further is unnecessary.",
)
_DO_ANSWER = ("Answer now.", "Give your answer.", "State the final answer.", "Respond with the answer.")
_DONT_ANSWER = (
    "Don't answer yet.",
    "Do not answer now.",
    "Hold off on the answer.",
    "It is too early to answer.",
    "You can't answer yet.",
    "Before answering,",
)
_DO_SEARCH = ("Keep searching.", "Search more.", "Gather more information.", "Look further.")

SEARCHER = IntentSet(
    "searcher",
    (
        IntentSpec(
            "answer_now",
            "stop searching and give the final answer",
            (
                "You already have enough evidence. Give your final answer now.",
                "Stop searching and answer the question.",
                "You have the answer already; write it down.",
                "That's enough research, respond with your final answer.",
                "Commit to an answer right away.",
                "No more searching: just answer.",
                "The documents you have contain the answer, so answer now.",
                "Finish up and give the answer.",
                "Time to wrap up and provide your answer.",
                "Quit looking things up and reply with the answer.",
                "Go ahead and answer with what you have found.",
                *_composed(_STOP_SEARCHING, _DO_ANSWER),
            ),
        ),
        IntentSpec(
            "stop_repeating",
            "break a loop of repeated searches",
            (
                "Stop repeating searches you have already made.",
                "You keep issuing the same query over and over.",
                "Don't search for the same thing again.",
                "You already searched this; repeating it won't help.",
                "Avoid re-running identical queries.",
                "You're going in circles with the same search.",
                "That query is a duplicate of an earlier one.",
                "Searching the same terms again gives the same results.",
            ),
        ),
        IntentSpec(
            "refocus",
            "return from a tangent to the question",
            (
                "Refocus on the goal.",
                "You are drifting off topic; get back to the question.",
                "That is irrelevant to what was asked.",
                "Stay on task and remember what the question asks.",
                "This tangent does not help answer the question.",
                "Concentrate on the original question.",
                "You're getting sidetracked, return to the main task.",
                "Remember the actual goal of this task.",
                "Keep in mind what you are supposed to find out.",
            ),
        ),
        IntentSpec(
            "search_for",
            "search for a given thing",
            (
                "Search for: the birthplace of the director",
                "Look up the population of the city.",
                "Try searching for the author of the novel.",
                "Query the name of the band's lead singer.",
                "Run a search on the film's release date.",
                "Search the spouse of the actor.",
                "You should look up who founded the company.",
                "Find information about the treaty's signing year with a search.",
                "Search for:",
                "Query:",
                "Look up:",
            ),
            takes_argument=True,
        ),
        IntentSpec(
            "keep_searching",
            "do not answer yet; continue searching",
            (
                "The evidence so far does not answer the question; do not answer yet, keep searching.",
                "Don't answer yet, keep looking.",
                "You haven't found the answer; search more.",
                "Continue searching before you respond.",
                "There is not enough information yet; do another search.",
                "It's too early to answer, gather more evidence.",
                "The results don't contain the answer, so keep searching.",
                "Hold off on answering and search further.",
                "Wait, you have not found the answer yet.",
                "Run more searches before deciding on an answer.",
                "You are not done searching.",
                "The answer has not turned up yet; continue the search.",
                "You do not have the answer yet, so look again.",
                "The evidence is incomplete; search on.",
                *_composed(_DONT_ANSWER, _DO_SEARCH),
            ),
        ),
        IntentSpec(
            "verify",
            "re-read the evidence and check it",
            (
                "Verify the evidence: re-read the retrieved documents and check that they answer the question.",
                "Double-check your answer against the documents.",
                "Re-read the search results carefully.",
                "Make sure the passages actually support that answer.",
                "Check the sources again before answering.",
                "Confirm the answer with the retrieved evidence.",
                "Look again at the documents you already retrieved.",
                "Are you sure? Verify it against what you found.",
                "Please verify your answer.",
                "Read the results again before you answer.",
            ),
        ),
        IntentSpec(
            "backtrack",
            "abandon an entity that may be the wrong one",
            (
                "Backtrack: the entity you are following may be the wrong one; reconsider it.",
                "You may be on the wrong track with this person.",
                "That's probably the wrong entity; go back a step.",
                "Reconsider the assumption you made earlier.",
                "The lead you are following looks mistaken; undo it.",
                "Go back and reconsider which entity the question refers to.",
                "You might have confused this with a different person.",
                "Retrace your steps; an earlier conclusion seems wrong.",
                "The person or work you identified may be a different one.",
            ),
        ),
        IntentSpec(
            "plan",
            "organise the search as a plan of sub-questions",
            (
                "Plan: break the question into sub-questions and answer each in turn.",
                "First decompose the problem into steps, then search each step.",
                "Make a plan before searching.",
                "Split this into smaller questions and tackle them one by one.",
                "Think step by step: first find X, then use it to find Y.",
                "Outline the sub-questions you need to resolve.",
                "Work through the question in stages.",
                "Start by identifying what you need to know, then search for each part.",
                "Decompose the question before anything else.",
                "Break the question down.",
            ),
        ),
        _NOT_ACTIONABLE,
    ),
)

INTENT_SETS: dict[str, IntentSet] = {}


def register_intent_set(intent_set: IntentSet) -> IntentSet:
    """Add an intent set (every set reads ``none`` for notes that ask for nothing)."""
    if NONE not in intent_set.names:
        intent_set = IntentSet(intent_set.name, intent_set.intents + (_NOT_ACTIONABLE,))
    INTENT_SETS[intent_set.name] = intent_set
    return intent_set


def get_intent_set(name: str) -> IntentSet:
    if name not in INTENT_SETS:
        raise unknown_name("intent set", name, list(INTENT_SETS))
    return INTENT_SETS[name]


register_intent_set(SEARCHER)
