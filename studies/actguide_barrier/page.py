"""``docs/results_actguide_barrier.md`` from the committed summary: ``python -m studies.actguide_barrier.page``.

Reads only ``results/summary.json`` (written by :mod:`.summarize` from the pipeline's folder), so the page is
rebuilt without running anything.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from pathlib import Path

from benchmarks.harness.stats import Interval
from benchmarks.harness.verdicts import verdict
from benchmarks.pages.code_records import code_of
from steer_envs.paths import REPO_ROOT

from .alignment import STEP_NAMES
from .confirm import RESULT_FILE
from .run import ABLATIONS
from .summarize import RESULTS

PAGE = REPO_ROOT / "docs" / "results_actguide_barrier.md"
NAMES = {
    "base": "base",
    "zero_rl": "zero RL",
    "actguide": "ACTGUIDE-RL",
    "no_adaptive": "no adaptive k (full guidance at once)",
    "no_fallback": "no fallback (no full guidance after a failed search)",
    "no_mixed": "no mixed-policy loss (guided rollouts on the guided prompt)",
    "noise_10": "10% of reference actions wrong",
    "noise_20": "20% wrong",
    "sft_rl": "SFT on the reference plans, then zero RL",
    "unguided_baseline": "guided groups baselined by the unguided group they replace",
    "zero_rl_longer": "zero RL, twice the budget",
    "actguide_longer": "ACTGUIDE-RL, twice the budget",
}


def iv(x: Sequence[float] | None, signed: bool = True) -> str:
    if not x:
        return "–"
    fmt = "{:+.1f}" if signed else "{:.1f}"
    return f"{fmt.format(x[0])} [{fmt.format(x[1])}, {fmt.format(x[2])}]"


def num(x: float | None, digits: int = 2) -> str:
    return "–" if x is None or x != x else f"{x:.{digits}f}"


def card(summary: dict, split: str, tasks: str, what: str, setting: dict) -> str:
    code = code_of(summary)
    commits = ", ".join(f"`{c}`" for c in code.commits)
    return (
        f"*Setting card: split {split}, {tasks}, code {commits} ({'clean' if code.clean else 'uncommitted changes'}), "
        f"{what}, training setting `{json.dumps(setting, sort_keys=True)}`.*"
    )


def same_tasks_card(code_source: dict, plan: dict) -> str:
    """The card of a table on section 2's test tasks; ``code_source`` is the summary whose code measured it."""
    return card(
        code_source,
        plan["eval_split"],
        "the tasks of section 2",
        f"{plan['eval_rollouts']} rollouts per task and training seed",
        plan["setting"],
    )


def section_barrier(s: dict) -> list[str]:
    plan, fam = s["plan"], s["groups"].get("family", {})
    levels = fam.get("levels", {})
    lines = ["## 1. The barrier, measured before anything trains on it", ""]
    bp = s.get("base_pass", {})
    lines += [
        f"**The base alone** (unguided, {bp.get('test', {}).get('K', '–')} rollouts per task; success and Pass@K "
        "in %, 95% interval of the level):",
        "",
        "| Split | tasks | base success | base Pass@K |",
        "|---|---:|---:|---:|",
    ]
    for split in ("dev", plan["eval_split"]):
        row = bp.get(split)
        if row:
            lines.append(f"| {split} | {row['tasks']} | {iv(row['success'], False)} | {iv(row['pass'], False)} |")
    lines += ["", card(s, "dev and test", "the family's tasks", "the base's own training setting", plan["base"]), ""]
    z = levels.get("zero_rl")
    if z:
        lines += [
            f"**Zero RL at the full budget** ({plan['setting']['budget']} rollouts, {z['seeds']} training seeds, the "
            "family's train tasks in the RL pool), evaluated without a hint on the family's test tasks "
            f"({plan['eval_rollouts']} rollouts per task and seed):",
            "",
            "| Policy | success (%) | per training seed | Pass@8 (%) |",
            "|---|---:|---:|---:|",
        ]
        for name in ("base", "zero_rl"):
            row = levels.get(name)
            if row:
                seeds = ", ".join(f"{v:.1f}" for v in row["per_seed"])
                lines.append(f"| {NAMES[name]} | {iv(row['success'], False)} | {seeds} | {iv(row['pass'], False)} |")
        lines += [
            "",
            card(
                s,
                plan["eval_split"],
                f"{z['tasks']} family tasks",
                f"{plan['eval_rollouts']} rollouts per task and training seed",
                plan["setting"],
            ),
            "",
        ]
    lines += section_diagnostics(s, ("base", "zero_rl"))
    return lines


def section_diagnostics(s: dict, labels: Sequence[str]) -> list[str]:
    reports = {k: v for k, v in s.get("barrier", {}).items() if k in labels}
    if not reports:
        return []
    plan = s["plan"]
    first = next(iter(reports.values()))
    ks = sorted(int(k) for k in first["prefix_pass"])
    lines = [
        f"**Barrier diagnostics** (`steer-envs barrier --task-family skill_chain`, {first['tasks']} test tasks, "
        f"K = {first['K']} rollouts per estimate, seed 0 of each run). Prefix-level Pass@K: from the state after the "
        "first k reference actions (searches executed); the interval is the paired difference with k = 0 (points):",
        "",
        "| Policy | " + " | ".join(f"Pass@K prefix k={k}" for k in ks) + " |",
        "|---|" + "---:|" * len(ks),
    ]
    for label, r in reports.items():
        cells = [f"{100 * r['prefix_pass'][str(k)]:.0f}" for k in ks]
        lines.append(f"| {NAMES[label]} | " + " | ".join(cells) + " |")
    lines += ["", "| Policy | " + " | ".join(f"k={k} − k=0" for k in ks[1:]) + " |", "|---|" + "---:|" * len(ks[1:])]
    for label, r in reports.items():
        pre = r["intervals"]["prefix"]
        lines.append(f"| {NAMES[label]} | " + " | ".join(iv(pre.get(str(k))) for k in ks[1:]) + " |")
    lines += [
        "",
        "| Policy | " + " | ".join(f"hint k={k} − k=0" for k in ks[1:]) + " |",
        "|---|" + "---:|" * len(ks[1:]),
    ]
    for label, r in reports.items():
        pro = r["intervals"].get("prompt", {})
        lines.append(f"| {NAMES[label]} | " + " | ".join(iv(pro.get(str(k))) for k in ks[1:]) + " |")
    lines += [
        "",
        "Prompt-level Pass@K (a k-action hint in the prompt; above, its paired difference with k = 0 in points), "
        "B_k = log((Pass@K(k) + ε) / (Pass@K(0) + ε)) and "
        "|ΔLogit| (mean |log π(a | s, g_k) − log π(a | s)| on guided actions):",
        "",
        "| Policy | "
        + " | ".join(f"hint k={k}" for k in ks)
        + " | "
        + " | ".join(f"B_{k}" for k in ks[1:])
        + " | "
        + " | ".join(f"ΔLogit k={k}" for k in ks[1:])
        + " |",
        "|---|" + "---:|" * (3 * len(ks) - 2),
    ]
    for label, r in reports.items():
        cells = [f"{r['prompt_pass'][str(k)]:.2f}" for k in ks]
        cells += [f"{r['B'][str(k)]:+.2f}" for k in ks[1:]]
        cells += [num(r["delta_logit"].get(str(k))) for k in ks[1:]]
        lines.append(f"| {NAMES[label]} | " + " | ".join(cells) + " |")
    T = len(first["M"])
    lines += [
        "",
        "M_t along the policy's own unguided trajectory (Ψ̂(s_t): any of K continuations succeeds; interval of the "
        "level in points) and κ_t = M_{t+1} / M_t:",
        "",
        "| Policy | "
        + " | ".join(f"M_{t}" for t in range(T))
        + " | "
        + " | ".join(f"κ_{t}" for t in range(T - 1))
        + " |",
        "|---|" + "---:|" * (2 * T - 1),
    ]
    for label, r in reports.items():
        m = r["intervals"]["M"]
        cells = [iv(m.get(str(t)), False) for t in range(T)] + [num(x) for x in r["kappa"]]
        lines.append(f"| {NAMES[label]} | " + " | ".join(cells) + " |")
    lines += [
        "",
        card(
            s,
            plan["eval_split"],
            f"{first['tasks']} family tasks",
            "the diagnostics' rollouts per estimate",
            plan["setting"],
        ),
        "",
    ]
    return lines


def table_groups(s: dict, names: Sequence[str], reference: str, groups: dict | None = None) -> list[str]:
    """Success, paired gain over ``reference`` and Pass@8 on the family and the real benchmarks (test unless
    ``groups`` is given, e.g. the summary's ``dev``), with each row's training seeds."""
    groups = s["groups"] if groups is None else groups
    lines = [
        f"| Policy | seeds | family: success | family: − {NAMES[reference]} | family: Pass@8 | real: success | "
        f"real: − {NAMES[reference]} | real: Pass@8 |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for name in names:
        seeds = groups.get("family", {}).get("levels", {}).get(name, {}).get("seeds")
        cells = ["–" if seeds is None else str(seeds)]
        for group in ("family", "real"):
            g = groups.get(group, {})
            row = g.get("levels", {}).get(name)
            gain = g.get("gains", {}).get(f"{name} - {reference}", {})
            if row is None:
                cells += ["–", "–", "–"]
                continue
            cells += [
                f"{row['success'][0]:.1f}",
                iv(gain.get("success")) if name != reference else "–",
                f"{row['pass'][0]:.1f}",
            ]
        lines.append(f"| {NAMES[name]} | " + " | ".join(cells) + " |")
    return lines


def section_compare(s: dict) -> list[str]:
    fam = s["groups"].get("family", {}).get("levels", {})
    if "actguide" not in fam:
        return []
    plan = s["plan"]
    real_tasks = s["groups"]["real"]["levels"]["actguide"]["tasks"]
    lines = [
        "## 2. ACTGUIDE-RL against zero RL on the barrier",
        "",
        f"Both from the base, the same RL pool and budget ({plan['setting']['budget']} rollouts, probes and guided "
        f"rollouts counted), {fam['actguide']['seeds']} training seeds each, evaluated without a hint; success and "
        "Pass@8 in %, gains in points with paired 95% intervals. Family: the family's test tasks; real: "
        f"{real_tasks} test tasks of the seven real benchmarks (macro mean), where nothing of the family appears.",
        "",
        *table_groups(s, ["base", "zero_rl", "actguide"], "zero_rl"),
        "",
        card(
            s,
            plan["eval_split"],
            f"{fam['actguide']['tasks']} family + {real_tasks} real tasks",
            f"{plan['eval_rollouts']} rollouts per task and training seed",
            plan["setting"],
        ),
        "",
    ]
    tr = s.get("training", {})
    if tr:
        lines += [
            "Where the budget went (training logs, means over training seeds):",
            "",
            "| Training | iterations | rollouts | probes | guided groups | rescued groups | rescued family groups | "
            "guided push toward | guided push away | mean r_mix |",
            "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
        ]
        for name, r in tr.items():
            lines.append(
                f"| {NAMES[name]} | {r['iterations']:.0f} | {r['rollouts']:.0f} | {r['probe_rollouts']:.0f} | "
                f"{r['guided_groups']:.0f} | {r['rescued_groups']:.0f} | {r['family_rescued']:.0f} | "
                f"{num(r.get('guided_push_up'))} | {num(r.get('guided_push_down'))} | {num(r.get('r_mix'))} |"
            )
        lines.append("")
    lines += section_diagnostics(s, ("actguide",))
    al = s.get("alignment", {})
    if al:
        steps = list(STEP_NAMES)
        lines += [
            "**Do the skill's actions reach the unguided policy?** The family's test plans replayed without a hint; "
            "per plan step, π_u(reference action) × the number of admissible actions (1 = uniform) and, in "
            "brackets, the share of steps where it is π_u's top choice (%). Steps 2 and 3 are the skill.",
            "",
            "| Model | " + " | ".join(steps) + " |",
            "|---|" + "---:|" * len(steps),
        ]
        for label, row in sorted(al.items()):
            name, _, seed = label.partition(".")
            cells = [f"{num(row[st]['times_candidates'])} ({100 * (row[st]['top'] or 0):.0f})" for st in steps]
            lines.append(f"| {NAMES.get(name, name)} {seed} | " + " | ".join(cells) + " |")
        lines.append("")
    return lines


def section_selection(s: dict) -> list[str]:
    """The method's arm chosen on dev by the pre-stated rule, then its test comparison with zero RL."""
    sel, dev = s.get("selection", {}), s.get("dev", {})
    if not sel or not dev:
        return []
    plan = s["plan"]
    chosen = sel["chosen"]
    names = [c["name"] for c in sel["candidates"]]
    dev_fam, dev_real = dev["family"]["levels"], dev["real"]["levels"]
    seeds = dev_fam[chosen]["seeds"]
    lines = [
        "### The method's arm: proposed from test results, picked on dev",
        "",
        "Candidates for the arm that stands for the method: "
        + ", ".join(NAMES[n] for n in names)
        + f", each at the equal budget with {seeds} training seeds. The rule (`studies/actguide_barrier/selection.py`"
        f", fixed in code before the pipeline ran) chooses {sel['criterion']}. It reads only dev "
        f"evaluations: the family's {dev_fam[chosen]['tasks']} dev tasks and {dev_real[chosen]['tasks']} dev tasks of "
        f"the real benchmarks (macro mean), unguided, {plan['eval_rollouts']} rollouts per task and training seed.",
        "",
        "**Dev** (what chose):",
        "",
        *table_groups(s, ["base", "zero_rl", *names], "zero_rl", groups=dev),
        "",
        f"| Candidate | dev family success (%) | dev real − zero RL (points) | eligible (≥ −{sel['tolerance']:.1f}) |",
        "|---|---:|---:|---|",
    ]
    for c in sel["candidates"]:
        lines.append(
            f"| {NAMES[c['name']]} | {c['family_success']:.2f} | {c['real_gain']:+.2f} | "
            f"{'yes' if c['eligible'] else 'no'} |"
        )
    lines += [
        "",
        f"**Chosen: {NAMES[chosen]}**"
        + ("" if sel["bound_met"] else " (no candidate met the in-region bound; the smallest in-region loss decided)")
        + ".",
        "",
        card(
            s,
            plan.get("dev_split", "dev"),
            f"{dev_fam[chosen]['tasks']} family + {dev_real[chosen]['tasks']} real tasks",
            f"{plan['eval_rollouts']} rollouts per task and training seed",
            plan["setting"],
        ),
        "",
        f"**Test** (the chosen arm and every candidate against zero RL, {seeds} training seeds each; gains paired over "
        "tasks and training seeds):",
        "",
        *table_groups(s, ["zero_rl", chosen, *[n for n in names if n != chosen]], "zero_rl"),
        "",
    ]
    fam, real = s["groups"]["family"], s["groups"]["real"]
    lines += [
        f"Test, {NAMES[chosen]} − zero RL: family success {iv(fam['gains'][f'{chosen} - zero_rl']['success'])} "
        f"points (Pass@8 {iv(fam['gains'][f'{chosen} - zero_rl']['pass'])}), real benchmarks "
        f"{iv(real['gains'][f'{chosen} - zero_rl']['success'])} points.",
        "",
    ]
    for n in names:
        other = fam["gains"].get(f"{n} - {chosen}")
        if n != chosen and other:
            lines += [
                f"Test, {NAMES[n]} − {NAMES[chosen]} (not chosen): family success {iv(other['success'])} points, real "
                f"benchmarks {iv(real['gains'][f'{n} - {chosen}']['success'])} points.",
                "",
            ]
    lines += [
        card(
            s,
            plan["eval_split"],
            f"{fam['levels'][chosen]['tasks']} family + {real['levels'][chosen]['tasks']} real tasks",
            f"{plan['eval_rollouts']} rollouts per task and training seed",
            plan["setting"],
        ),
        "",
    ]
    return lines


def section_longer(s: dict) -> list[str]:
    fam = s["groups"].get("family", {}).get("levels", {})
    if "actguide_longer" not in fam or "zero_rl_longer" not in fam:
        return []
    plan = s["plan"]
    return [
        "## 3. Twice the budget",
        "",
        f"The same comparison at {2 * plan['setting']['budget']} rollouts (training seed 0 of each method), on the "
        "same tasks and rollout seeds as section 2:",
        "",
        *table_groups(s, ["zero_rl_longer", "actguide_longer"], "zero_rl_longer"),
        "",
        card(
            s,
            plan["eval_split"],
            "the tasks of section 2",
            f"{plan['eval_rollouts']} rollouts per task",
            {**plan["setting"], "budget": 2 * plan["setting"]["budget"]},
        ),
        "",
    ]


def section_ablations(s: dict) -> list[str]:
    fam = s["groups"].get("family", {}).get("levels", {})
    present = [a for a in ABLATIONS if a in fam]
    if not present:
        return []
    plan = s["plan"]
    return [
        "## 4. Ablations, noisy plans and SFT then RL",
        "",
        "Each variant of `agents/actguide/config.py:VARIANTS` from the same base, setting and budget (training seeds "
        "per row in the table), against ACTGUIDE-RL on the same tasks and rollout seeds:",
        "",
        *table_groups(s, ["actguide", *present], "actguide"),
        "",
        same_tasks_card(s, plan),
        "",
    ]


def gain(s: dict, group: str, pair: str, measure: str = "success") -> list[float] | None:
    return s["groups"].get(group, {}).get("gains", {}).get(pair, {}).get(measure)


def judged(x: Sequence[float] | None, direction: int = 1) -> str:
    """An interval and its verdict by the one rule (:func:`benchmarks.harness.verdicts.verdict`)."""
    return "–" if not x else f"{iv(x)} ({verdict(Interval(*x), direction)})"


def section_answer(s: dict, confirmation: dict | None) -> list[str]:
    """The answer, every figure read from the summaries and every verdict from the one rule."""
    fam = s["groups"].get("family", {}).get("levels", {})
    if "zero_rl" not in fam or "actguide" not in fam:
        return []
    lines = ["## Answer", ""]
    bp = s.get("base_pass", {})
    z = fam["zero_rl"]
    base_pass = ", ".join(f"{iv(row['pass'], False)} on {split}" for split, row in bp.items())
    hint = s.get("barrier", {}).get("base", {}).get("intervals", {}).get("prompt", {})
    top = max(hint, key=int) if hint else None
    lines += [
        f"*The barrier.* The base's Pass@{next(iter(bp.values()))['K'] if bp else '–'} on the family: {base_pass}. "
        f"Zero RL at the full budget: family success {iv(z['success'], False)} % "
        f"(per training seed {', '.join(f'{v:.1f}' for v in z['per_seed'])})"
        + (f"; a {top}-action hint in the prompt changes the base's Pass@8 by {iv(hint[top])} points" if top else "")
        + ".",
        "",
    ]
    sel = s.get("selection", {})
    chosen = sel.get("chosen", "actguide")
    if sel:
        dev = "; ".join(
            f"{NAMES[c['name']]}: real − zero RL {c['real_gain']:+.2f}, family {c['family_success']:.2f} %"
            for c in sel["candidates"]
        )
        lines += [
            f"*The method's arm, chosen on dev by the rule fixed before the run* ({dev}; the in-region bound "
            f"{'held for at least one' if sel['bound_met'] else 'held for none, so the smaller in-region loss decided'}"
            f"): **{NAMES[chosen]}**.",
            "",
        ]
    lines += [
        "*Test, against zero RL at the equal budget* (points of success, each with its verdict):",
        "",
    ]
    for name in dict.fromkeys([chosen, *(c["name"] for c in sel.get("candidates", []))]):
        pair = f"{name} - zero_rl"
        mark = " (chosen)" if name == chosen and sel else ""
        lines.append(
            f"- {NAMES[name]}{mark}: family {judged(gain(s, 'family', pair))}, real {judged(gain(s, 'real', pair))}"
        )
    longer = gain(s, "family", "actguide_longer - zero_rl_longer")
    if longer:
        lines.append(
            f"- {NAMES['actguide_longer']} − {NAMES['zero_rl_longer']} (one seed each): family {judged(longer)}, real "
            f"{judged(gain(s, 'real', 'actguide_longer - zero_rl_longer'))}"
        )
    lines.append("")
    if confirmation:
        fresh = confirmation["confirmation"]
        pair = f"{confirmation['chosen']} - zero_rl"
        lines += [
            f"*On fresh training seeds* ({', '.join(map(str, confirmation['confirmation_seeds']))}; section 5): "
            f"{NAMES[confirmation['chosen']]} − zero RL, family {iv(fresh['family']['gains'][pair]['success'])}, real "
            f"{iv(fresh['real']['gains'][pair]['success'])}: **{confirmation['verdict']}** by the criterion fixed "
            "before the run.",
            "",
        ]
    tr = s.get("training", {})
    pushes = [
        f"{NAMES[n]} {tr[n]['guided_push_up']:.2f} / {tr[n]['guided_push_down']:.2f}"
        for n in ("actguide", "unguided_baseline")
        if n in tr
    ]
    if pushes:
        lines += [
            "*Where the update goes* (training logs, per trained token, means over seeds): how hard guided rollouts "
            "push π_u toward / away from the guided actions: "
            + "; ".join(pushes)
            + ". Normalised within the guided group, a guided failure gets a negative advantage and pushes away from "
            "what the guide showed; baselined by the unguided group it replaces, a guided failure gets 0.",
            "",
        ]
    present = [a for a in ABLATIONS if f"{a} - actguide" in s["groups"].get("family", {}).get("gains", {})]
    if present:
        lines += [
            "*Ablations against ACTGUIDE-RL on the family* (section 4): "
            + "; ".join(f"{NAMES[a]} {judged(gain(s, 'family', f'{a} - actguide'), -1)}" for a in present)
            + ".",
            "",
        ]
    return lines


def section_confirmation(s: dict, confirmation: dict | None) -> list[str]:
    """The arm chosen on dev against zero RL on training seeds no earlier run used."""
    if not confirmation:
        return []
    plan = s["plan"]
    c = confirmation
    seeds = ", ".join(map(str, c["confirmation_seeds"]))
    pair = f"{c['chosen']} - zero_rl"
    fresh_gain = c["confirmation"]["family"]["gains"][pair]["success"]
    arms = ["zero_rl", *dict.fromkeys([c["chosen"], "actguide", "unguided_baseline"])]
    return [
        "## 5. Confirmation on fresh training seeds",
        "",
        f"Zero RL and every candidate trained again from the same base, setting and budget on training seeds {seeds} "
        "(the runs above use seeds "
        f"{', '.join(map(str, c['earlier_seeds']))}), evaluated on the same test tasks. The criterion, fixed in "
        f"`studies/actguide_barrier/confirm.py` before this run: {c['criterion']}.",
        "",
        f"**{NAMES[c['chosen']]} − zero RL on the fresh seeds, family success: {iv(fresh_gain)} points → "
        f"{c['verdict']}.**",
        "",
        *table_groups(s, arms, "zero_rl", groups=c["confirmation"]),
        "",
        f"All {len(c['earlier_seeds']) + len(c['confirmation_seeds'])} training seeds together:",
        "",
        *table_groups(s, arms, "zero_rl", groups=c["all_seeds"]),
        "",
        same_tasks_card(c, plan),
        "",
    ]


#: the mechanism study's summary (``python -m studies.actguide_mechanism.run``), shown in section 6 when committed
MECHANISM = REPO_ROOT / "studies" / "actguide_mechanism" / "results" / "summary.json"


def section_mechanism(m: dict | None) -> list[str]:
    """Inside the update: what each arm's guided groups teach, per run, from the mechanism study's records."""
    if not m:
        return []
    lines = [
        "## 6. Inside the update: what the guided groups teach",
        "",
        "The arms of section 2 trained again with a trainer that records, before every update, each guided group on "
        "the family's tasks ([studies/actguide_mechanism](../studies/actguide_mechanism/README.md); the same settings, "
        "base and seeds: the trainer logs' guided groups, rescued groups and rollouts equal section 2's runs"
        + (" for every arm" if m.get("checked") and all(c["same"] for c in m["checked"].values()) else "")
        + "). *All 0 / all 1 / mixed*: the share of guided groups whose rewards are all 0, all 1, or both (under "
        "group normalisation the first two have advantage 0 on every rollout). *Link steps*: the two steps that "
        "carry the skill (the first and the second link), on guided rollouts that succeeded in four steps. On them: "
        "the advantage; `r` = π_θ(a | unguided prompt) / π_old(a | guided prompt), the mixed-policy ratio; the "
        "weight `r/(r+γ)` the update puts on the advantage; their product, the push toward the link; and π_u(link), "
        "the unguided policy's probability of the link action, over the first and the second half of training.",
        "",
        "| Arm | seed | guided family groups | all 0 | all 1 | mixed | link steps | advantage | r | weight | push | "
        "π_u(link), first → second half |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    for arm, data in m["arms"].items():
        for run, r in data["runs"].items():
            share = r["share"]
            lines.append(
                f"| {NAMES.get(arm, arm)} | {run.removeprefix('seed')} | {r['guided_family_groups']} | "
                f"{num(share['all_fail'])} | {num(share['all_success'])} | {num(share['mixed'])} | {r['link_steps']} | "
                f"{num(r['link_adv'])} | {num(r['link_r'], 3)} | {num(r['link_weight'])} | {num(r['link_push'])} | "
                f"{num(r['link_p_unguided_first_half'], 3)} → {num(r['link_p_unguided_second_half'], 3)} |"
            )
    means = {arm: data["mean_over_seeds"] for arm, data in m["arms"].items()}
    lines += [
        "",
        "Means over seeds: "
        + "; ".join(
            f"{NAMES.get(arm, arm)}: zero-advantage groups {num(x['zero_advantage_share'])}, advantage on the links "
            f"{num(x['link_adv'])}, weight {num(x['link_weight'])}, push {num(x['link_push'])}"
            for arm, x in means.items()
        )
        + ".",
        "",
        f"*Setting card: the family's train tasks during training, {m['seeds']} training seeds per arm, code "
        + ", ".join(f"`{c}`" for c in m["code"]["commits"])
        + f" ({'clean' if m['code']['clean'] else 'not clean'}), {m['training_seconds'] / 60:.1f} min of training "
        "(base and arms, one core each).*",
        "",
        "```",
        m["command"],
        "```",
        "",
    ]
    return lines


def mechanism_answer(m: dict | None) -> list[str]:
    """The answer's reading of section 6: whether zero-advantage groups or the size of the push on the skill's
    actions separates the arms (each figure a mean over seeds)."""
    if not m or not {"actguide", "unguided_baseline"} <= set(m["arms"]):
        return []
    a, u = (m["arms"][arm]["mean_over_seeds"] for arm in ("actguide", "unguided_baseline"))
    zero = a["zero_advantage_share"]
    reading = (
        "most are mixed, so a zero advantage is not what holds the method back"
        if zero < 0.5
        else "most teach nothing under group normalisation"
    )
    ratio = u["link_push"] / a["link_push"] if a["link_push"] else float("nan")
    return [
        f"*Inside the update* (section 6, means over seeds): {zero:.0%} of ACTGUIDE-RL's guided groups on the family "
        f"have every reward equal; {reading}. On the link steps of its successful guided rollouts the advantage is "
        f"{a['link_adv']:.2f} and the mixed-policy weight {a['link_weight']:.2f} (`r` = {a['link_r']:.2f}: the "
        f"unguided policy finds the link far less likely than the guided one), a push of {a['link_push']:.2f}; "
        f"baselined by the unguided group, the advantage is {u['link_adv']:.2f}, the weight {u['link_weight']:.2f} "
        f"and the push {u['link_push']:.2f}, {ratio:.1f} times as hard.",
        "",
    ]


def render(s: dict, intro: str, confirmation: dict | None = None, mechanism: dict | None = None) -> str:
    times = s.get("times_s", {})
    lines = [
        "# ACTGUIDE-RL against a skill barrier (the `skill_chain` family)",
        "",
        intro.strip(),
        "",
        f"Wall time of the pipeline (summed over its runs; trainings {s['plan'].get('jobs', 1)} at a time, one core "
        "each, on a 2-core machine): " + ", ".join(f"{k} {v / 60:.1f} min" for k, v in sorted(times.items())) + ".",
        "",
        *section_answer(s, confirmation),
        *mechanism_answer(mechanism),
        *section_barrier(s),
        *section_compare(s),
        *section_selection(s),
        *section_longer(s),
        *section_ablations(s),
        *section_confirmation(s, confirmation),
        *section_mechanism(mechanism),
        "## Commands",
        "",
        "Each resumable; `RUNS` is the pipeline's `--out` folder. The first command runs the `steer-envs` commands "
        "below in this order (and the unguided evaluations and plan replays in its own process):",
        "",
        "```",
        f"python -m studies.actguide_barrier.run --out RUNS --jobs {s['plan'].get('jobs', 1)}"
        + (f" --ablation-seeds {s['plan']['ablation_seeds']}" if s["plan"].get("ablation_seeds", 1) != 1 else ""),
        "python -m studies.actguide_barrier.summarize RUNS      # results/summary.json",
        "python -m studies.actguide_barrier.confirm --out RUNS  # section 5: results/confirmation.json",
        "python -m studies.actguide_barrier.page                # this page, from the summaries",
        *s.get("commands", []),
        "```",
        "",
    ]
    return "\n".join(lines)


INTRO = Path(__file__).resolve().parent / "intro.md"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="the results page from the committed summary")
    parser.add_argument("--summary", default=str(RESULTS / "summary.json"))
    parser.add_argument("--page", default=str(PAGE))
    args = parser.parse_args(argv)
    summary = json.loads(Path(args.summary).read_text())
    found = Path(args.summary).parent / RESULT_FILE
    confirmation = json.loads(found.read_text()) if found.is_file() else None
    mechanism = json.loads(MECHANISM.read_text()) if MECHANISM.is_file() else None
    Path(args.page).write_text(render(summary, INTRO.read_text(), confirmation, mechanism), encoding="utf-8")
    print(f"written: {args.page}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
