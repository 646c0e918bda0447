"""CLI commands contributed by ``benchmarks`` (``steer-envs eval / report / demo``)."""


def register_commands() -> None:
    """Called through the ``steer_envs.commands`` entry point."""
