"""Reference plans: records, the hint text, the two sources (real rollouts, gold structure), noise, coverage."""

from __future__ import annotations

import json

import pytest

from steer_envs.data import load_rollouts, load_tasks, squad_em
from steer_envs.errors import DataFormatError
from steer_envs.reference_plans import (
    HINT_HEADER,
    PlanAction,
    ReferencePlan,
    format_plan_hint,
    from_gold,
    from_rollouts,
    inject_noise,
    load_reference_plans,
    parse_plan_hint,
)

SEQ = ReferencePlan(
    "t/1",
    (
        PlanAction.search("Van Hook Township county"),
        PlanAction.search("Mountrail County capital"),
        PlanAction.answer("Stanley"),
    ),
    "gold:decomposition",
)


def test_hint_text_format():
    hint = format_plan_hint(SEQ.actions, 2)
    lines = hint.splitlines()
    assert HINT_HEADER == "Reference action trajectory hint:"
    assert lines[1] == HINT_HEADER
    assert lines[2] == '1. search: {"query": "Van Hook Township county"}'
    assert lines[3] == '2. search: {"query": "Mountrail County capital"}'
    assert len(lines) == 4  # only the first k actions
    assert format_plan_hint(SEQ.actions, 0) == ""
    assert format_plan_hint(SEQ.actions, 9).splitlines()[-1] == '3. answer: {"answer": "Stanley"}'
    assert parse_plan_hint("Question: x\n" + format_plan_hint(SEQ.actions, 3)) == list(SEQ.actions)


def test_records_validate_and_round_trip():
    assert ReferencePlan.from_dict(json.loads(SEQ.to_json())) == SEQ
    with pytest.raises(DataFormatError, match="unknown plan action"):
        PlanAction("visit", {"url": "x"})
    with pytest.raises(DataFormatError, match="non-empty string argument 'query'"):
        PlanAction("search", {"query": "  "})
    with pytest.raises(DataFormatError, match="needs task_id"):
        ReferencePlan.from_dict({"actions": []})


def test_gold_structure_of_each_kind(shared_data_dir):
    tasks = {t.id: t for t in load_tasks(["musique", "2wikimultihopqa", "hotpotqa", "popqa"], "train")}
    data = load_reference_plans(["musique", "2wikimultihopqa", "hotpotqa", "popqa"], "train")
    title = data.title_of.get
    musique = tasks["musique/2hop__574419_270105"]
    seq = from_gold(musique, title)
    assert seq.source == "gold:decomposition"
    # hop 2's "#1" is filled with hop 1's answer; the plan ends with the golden answer
    assert [a.text for a in seq.actions] == [
        "Van Hook Township located in the administrative territorial entity",
        "Mountrail County capital",
        "Stanley",
    ]
    wiki = next(t for t in tasks.values() if t.benchmark == "2wikimultihopqa" and t.evidences)
    seq = from_gold(wiki, title)
    assert seq.source == "gold:evidence" and seq.actions[0].text == f"{wiki.evidences[0][0]} {wiki.evidences[0][1]}"
    hotpot = next(t for t in tasks.values() if t.benchmark == "hotpotqa")
    seq = from_gold(hotpot, title)
    assert seq.source == "gold:supporting_titles"
    assert [a.text for a in seq.actions[:-1]] == list(dict.fromkeys(title(p) for p in hotpot.supporting_ids))
    popqa = tasks["popqa/0"]
    assert [a.text for a in from_gold(popqa, title).actions] == ["George Rankin occupation", "politician"]


def test_rollout_references_are_successful_real_rollouts(shared_data_dir):
    tasks = load_tasks(["triviaqa"], "train")
    rows = load_rollouts("search_r1_base")
    refs = from_rollouts(rows, tasks)
    by_id = {t.id: t for t in tasks}
    assert len(refs) > 300
    for ref in refs[:50]:
        assert ref.source == "rollout:search_r1_base"
        assert (
            ref.actions[-1].name == "answer" and squad_em(ref.actions[-1].text, by_id[ref.task_id].golden_answers) > 0
        )
        assert all(a.name == "search" for a in ref.actions[:-1]) and len(ref.actions) >= 2
    # failed rollouts give no reference
    failed = [r for r in rows if r.benchmark == "triviaqa"]
    assert len(refs) < len({r.question for r in failed})


def test_noise_replaces_the_given_share_with_on_topic_wrong_actions(shared_data_dir):
    data = load_reference_plans(["hotpotqa"], "train", sources=["gold"])
    ids = sorted(data.by_task)[:300]
    clean = [data.reference(i) for i in ids]
    for share in (0.1, 0.2):
        noisy = [data.reference(i, noise=share, noise_seed=3) for i in ids]
        assert noisy == [data.reference(i, noise=share, noise_seed=3) for i in ids]  # deterministic
        changed = sum(a != b for c, n in zip(clean, noisy) for a, b in zip(c.actions, n.actions))
        total = sum(len(c) for c in clean)
        assert abs(changed / total - share) < 0.05
        for c, n in zip(clean, noisy):
            assert [a.name for a in c.actions] == [a.name for a in n.actions]
    assert inject_noise(SEQ, 0.0, 0, ["x"]) is SEQ
    with pytest.raises(Exception, match="noise share"):
        inject_noise(SEQ, 1.5, 0, ["x"])


def test_coverage_command(capsys, shared_data_dir):
    from steer_envs.cli.main import main

    assert main(["reference-plans", "coverage", "--split", "dev", "--benchmarks", "musique", "bamboogle"]) == 0
    out = capsys.readouterr().out
    musique = next(line for line in out.splitlines() if line.startswith("musique"))
    bamboogle = next(line for line in out.splitlines() if line.startswith("bamboogle"))
    assert "gold:decomposition" in musique and "rollout:" in bamboogle
    assert int(musique.split()[1]) == 28  # dev tasks of MuSiQue
