"""Which role's message of the hand-off pipeline matters, and what each intervention does where: :mod:`.run`."""
