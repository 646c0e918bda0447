"""steer-envs: Gymnasium environments in which supervising and guiding LLM search agents are RL problems.

Importing the package registers the environment ids (``steer_envs/SearchSteering-v0`` and friends) with
Gymnasium; heavy dependencies (torch, transformers, bm25s) are imported only when an env or backend is built.
"""
from .errors import SteerEnvsError
from .envs.registration import register_envs as _register_envs

_register_envs()

__version__ = "0.1.0"
__all__ = ["SteerEnvsError", "__version__"]
