"""How every transformers model of the suite is loaded: from disk, with nothing fetched at run time.

Models come from a local folder or a pip package, never from a model hub, so the hub is switched off for the
process. transformers (5.x) also *kernelizes* a model it loads whenever the ``kernels`` package is installed: it
swaps layers such as the rotary embedding for kernels it downloads from the hub, which on an offline GPU machine
fails at load. :data:`LOCAL_LOAD` is the keyword set every ``from_pretrained`` of a model passes: local files only,
no hub kernels (the model runs torch's own layers, which is also what the CPU and the tests run).
"""

from __future__ import annotations

import os
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

#: keywords for ``AutoModelForCausalLM.from_pretrained``: read only local files, never kernelize from the hub
LOCAL_LOAD: dict[str, Any] = {"local_files_only": True, "use_kernels": False}
