"""Orchestration, in sub-packages whose imports point down (the order of this list):

* ``api`` -- the user's API: :class:`~kuration.Pipeline`, the function-style entry points, operators;
* ``dispatch`` -- compile the physical plan, check it, hand the run to a runtime;
* ``destination`` -- a remote artifact (object stores);
* ``memory``, ``disk``, ``stream`` -- the runtimes, peers that never import each other;
* ``run`` -- machinery the runtimes share: scoring, the named hours steps, staging;
* ``spec`` -- what a run is, as data: job files, logical parts, the physical plan, the budget.
"""
