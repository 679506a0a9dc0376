"""``pqueue chaos``: a randomized, multi-process fault checker a user points at a broker."""
