"""`python -m provisioner`: runs cli.main().

Layer: cli.
"""

import sys

from .cli import main

sys.exit(main())
