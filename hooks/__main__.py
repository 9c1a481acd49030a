"""`python -m hafiza.hooks <client> <event>`: the hook entry point without the CLI's start-up cost."""

import sys

from .entry import main

sys.exit(main())
