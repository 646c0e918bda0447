"""CLI commands contributed by ``agents`` (``steer-envs train ...``)."""


def register_commands() -> None:
    """Called through the ``steer_envs.commands`` entry point."""
