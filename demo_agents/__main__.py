"""``python -m demo_agents``: see demo_agents/control.py."""

import sys

from demo_agents.control import main

sys.exit(main())
