"""The ``steer-envs`` command line: a registry of subcommands, extended by entry-point plugins."""
