"""ACTGUIDE-RL against a skill barrier that zero RL cannot cross (the ``skill_chain`` task family)."""
