"""Worker tests: the worker runtime with brokers. A Worker serving jobs, ``pqueue worker``
processes and their supervisor, periodic schedules and limits across workers, run on
every backend where they apply. Rules checked without running a worker are tests/unit's."""
