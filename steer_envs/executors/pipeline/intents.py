"""What a supervisor's note can mean to a role of the hand-off pipeline (the ``handoff`` intent set).

Every role reads notes and rejection feedback against this one vocabulary, by meaning (MiniLM probe, see
:mod:`steer_envs.notes`); what an intent *does* depends on the role and its hidden state (:mod:`.responses`).
Prototypes were chosen on ``tests/notes/handoff_paraphrases_dev.py``; the acceptance check reads the separate
``handoff_paraphrases_heldout.py``.
"""

from __future__ import annotations

from ...notes import SEARCHER, IntentSet, IntentSpec, register_intent_set

HANDOFF_INTENTS = "handoff"

HANDOFF = register_intent_set(
    IntentSet(
        HANDOFF_INTENTS,
        (
            IntentSpec(
                "accept",
                "the answer already satisfies the goal: accept it, stop re-checking",
                (
                    "The answer is already supported by the evidence; accept it.",
                    "This answer is correct, approve it and move on.",
                    "Accept the answer; it satisfies the question.",
                    "Stop rejecting: the evidence backs this answer.",
                    "The claim is supported, let it pass.",
                    "Approve the current answer.",
                    "That answer is good enough; pass it to the summary.",
                    "No further checking is needed, the answer stands.",
                    "Mark it as PASS, the facts confirm it.",
                    "You are being too strict; the answer is fine.",
                    "Keep the answer you have, it is right.",
                    "The answer matches the evidence; don't second-guess it.",
                ),
            ),
            IntentSpec(
                "keep_searching",
                "the evidence is insufficient: search for more before answering",
                (
                    "The evidence is not sufficient yet; search for more before answering.",
                    "Not enough information, keep searching.",
                    "Gather more evidence before deciding.",
                    "The facts do not answer the question yet; look further.",
                    "Do another round of searching.",
                    "It's too early to conclude, find more sources.",
                    "More facts are needed first.",
                    "The answer is not established; continue the search.",
                    "Search more.",
                    "Don't conclude yet, the evidence is incomplete.",
                    "Keep looking, the answer isn't in these facts.",
                ),
            ),
            SEARCHER["search_for"],  # the single searcher's: one meaning of "search for X" across the suite
            IntentSpec(
                "verify",
                "check the answer against the retrieved facts",
                (
                    "Check that the answer is supported by a retrieved fact.",
                    "Verify the claim against the sources.",
                    "Double-check the extracted value with the facts.",
                    "Make sure the facts actually state this answer.",
                    "Confirm the answer using the evidence before passing it on.",
                    "Re-read the facts and check the answer.",
                    "Is this really what the sources say? Check it.",
                    "Cross-check the answer with the documents.",
                    "Validate the claim before you continue.",
                    "Please verify the answer.",
                ),
            ),
            IntentSpec(
                "use_evidence",
                "answer with the value extracted from the evidence, not from memory",
                (
                    "Answer with the value extracted from the evidence, not from memory.",
                    "Use the reader's extracted answer in the final answer.",
                    "Base the answer on the facts that were found.",
                    "Don't answer from your own knowledge; use the evidence.",
                    "Your answer ignores the evidence; use what the facts say.",
                    "Take the answer from the retrieved facts.",
                    "Stick to the evidence the team gathered.",
                    "The final answer should be the value the evidence gives.",
                    "Report the answer that the sources support, not your guess.",
                    "Give the answer the verified facts point to.",
                ),
            ),
            IntentSpec(
                "concise",
                "keep the answer short: only the entity or value",
                (
                    "Keep the final answer short: just the name or value.",
                    "Answer in as few words as possible.",
                    "Only give the entity, no explanation.",
                    "Drop the extra words; give the bare answer.",
                    "Be concise: the answer alone.",
                    "Shorten the answer to the key term.",
                    "No full sentence, just the answer itself.",
                    "Trim the answer down to the essential words.",
                ),
            ),
            IntentSpec(
                "refocus",
                "return to the shared goal",
                (
                    "Refocus on the goal.",
                    "Remember what the question asks.",
                    "You are drifting off topic; get back to the question.",
                    "Stay on task: answer the original question.",
                    "That is irrelevant to the goal.",
                    "Keep the overall goal in mind.",
                    "Concentrate on what the user asked.",
                    "Don't lose sight of the main question.",
                ),
            ),
            IntentSpec(
                "decompose",
                "break the question into sub-questions and solve them in order",
                (
                    "Break the question into sub-questions and solve them in order.",
                    "Decompose the task into steps first.",
                    "Split this into smaller questions, one per hop.",
                    "First find the intermediate entity, then use it to answer.",
                    "Plan the steps: what must be found first?",
                    "Make a step-by-step plan for this question.",
                    "Divide the problem into parts and tackle each.",
                    "Work through the question hop by hop.",
                ),
            ),
            IntentSpec(
                "stop_repeating",
                "stop repeating the same searches",
                (
                    "Stop repeating searches you have already made.",
                    "You keep running the same query.",
                    "That search was already done; don't repeat it.",
                    "Avoid issuing identical queries again.",
                    "You're going in circles with the same search.",
                    "Repeating the search gives the same results.",
                    "Try a different query instead of the same one.",
                ),
            ),
            IntentSpec(
                "backtrack",
                "the entity being followed may be the wrong one",
                (
                    "The entity you are following may be the wrong one; reconsider it.",
                    "You may have picked the wrong person.",
                    "That's probably a different entity; go back a step.",
                    "Reconsider the assumption made earlier.",
                    "The lead you followed looks mistaken; undo it.",
                    "You might have confused this with something else.",
                    "Retrace your steps, an earlier conclusion seems wrong.",
                    "Consider the other option instead.",
                ),
            ),
        ),
    )
)
