"""Glue to the LLM-RL ecosystem: TRL's ``GRPOTrainer`` environments (:mod:`.trl`) and an OpenEnv server and client
(:mod:`.openenv`).

Why a subpackage of its own: both need optional extras (``pip install "steer-envs[trl]"``, ``"steer-envs[openenv]"``)
and ``import steer_envs`` must stay light, so nothing here is imported by the package itself and TRL / OpenEnv are
imported only inside the functions that need them.
"""
