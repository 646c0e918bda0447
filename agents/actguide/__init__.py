"""ACTGUIDE-RL: learning a search policy past its barrier with action guidance.

* :mod:`.policy` / :mod:`.causal_lm`: the learners (a CPU network over GuidedSearch-v0's admissible set that reads
  the hint; a causal LM in text mode with token log-probs);
* :mod:`.rollout`: lock-step groups of episodes that keep both views (guided / unguided) of every step;
* :mod:`.search`: the binary search for the minimal guidance ``k`` and its probes (forked in prefix mode);
* :mod:`.trainer`: guided GRPO with hard-group detection, fallback guider and the mixed-policy loss;
* :mod:`.sft`: supervised fine-tuning on the action data (the SFT+RL baseline);
* :mod:`.evaluate`, :mod:`.barrier`: evaluation without a hint, and the barrier diagnostics.

Train with ``steer-envs train actguide --out RUN_DIR`` (``--variant zero_rl`` etc. for baselines and ablations).
"""
