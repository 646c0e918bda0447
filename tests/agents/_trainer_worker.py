"""Runs a tiny steering and ACTGUIDE-RL training in this process, or in each process of an ``accelerate launch``;
every process writes the logged losses its trainers returned to ``OUT`` (the main process) or ``OUT.<index>``.
Used by tests/agents/test_trainer_base.py.

    python tests/agents/_trainer_worker.py RUN_DIR OUT [micro_batch]
    accelerate launch --multi_gpu --num_processes 2 tests/agents/_trainer_worker.py RUN_DIR OUT [micro_batch]
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from agents.actguide.config import ActGuideConfig
from agents.actguide.trainer import ActGuideTrainer
from agents.steering.config import SteeringConfig
from agents.steering.trainer import SteeringTrainer
from agents.trainer_base import end_processes, leave_launched_process
from tests.agents.support import small_actguide_args

STEERING = dict(m=2, k=6, G=4, N=2, bank_tasks=8, benchmarks=["nq", "hotpotqa"], eps_sel=0.5)
ACTGUIDE = small_actguide_args(budget=48)
KEYS = {
    "steering": ("loss", "loss_grpo", "loss_rank", "grad_norm", "mean_q"),
    "actguide": ("loss", "loss_pg", "loss_kl", "r_mix", "clip_frac", "tokens", "unguided_success"),
}


def main(run_dir: str, out: str, micro_batch: int = 0) -> None:
    root = Path(run_dir)
    steering = SteeringTrainer(SteeringConfig(**STEERING, micro_batch=micro_batch), root / "steering")
    s_log = steering.run().log
    actguide = ActGuideTrainer(ActGuideConfig(**ACTGUIDE, micro_batch=micro_batch), root / "actguide")
    a_log = actguide.run().log
    from accelerate.utils import gather_object

    # which units of a 10-unit batch each process backs (every process calls the gather)
    shares = gather_object([[i for r in steering.micro_batches(10) for i in r]])
    index = steering.accelerator.process_index
    # every process writes what its trainers returned (the main process to OUT, process i to OUT.i)
    Path(out if index == 0 else f"{out}.{index}").write_text(
        json.dumps(
            {
                "processes": steering.num_processes,
                "shares": shares,
                "steering": [{k: r[k] for k in KEYS["steering"]} for r in s_log],
                "actguide": [{k: r[k] for k in KEYS["actguide"]} for r in a_log],
            }
        )
    )
    end_processes()  # without it a process can abort at exit (SIGABRT) while its gloo group is alive
    leave_launched_process(0)  # as the train commands end


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], int(sys.argv[3]) if len(sys.argv) > 3 else 0)
