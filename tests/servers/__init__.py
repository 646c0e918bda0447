"""Test servers: loopback HTTP servers the tests and the perf suite run the product's clients against.

:mod:`.openai_server` serves any :class:`~steer_envs.llm.base.LLMBackend` (the tiny model, Gemma 270M) as an
OpenAI-compatible API, so the ``openai:`` backend and the executors built on it run over real HTTP without a GPU or
vLLM; :mod:`.latency_server` answers every request after a set latency, so the client side of serving is measured as
a GPU server would load it. Neither is installed: they run from a checkout, at the repository root.
"""
