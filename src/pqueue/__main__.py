"""``python -m pqueue`` runs the same CLI as the ``pqueue`` command."""

import sys

from pqueue.cli import main

sys.exit(main())
