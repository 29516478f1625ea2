"""Connectors that build public datasets into TimeF versions (see ``docs/connectors.md``).

Each dataset lives in ``datasets/<org>/<name>/`` with a ``dataset.yaml`` card
and an ``__init__.py`` exposing ``CONNECTOR``. Nothing here is imported by a
reader: only ``timenet-build`` and the client's auto_build load connectors.
"""
