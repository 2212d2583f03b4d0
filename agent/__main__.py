"""``python -m agent ...``: the same as ``fsched agent ...``."""

from __future__ import annotations

import sys

from agent.main import main

sys.exit(main())
