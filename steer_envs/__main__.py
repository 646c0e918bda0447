"""``python -m steer_envs ...`` is the ``steer-envs`` command (for environments without the console script)."""

import sys

from .cli.main import main

sys.exit(main())
