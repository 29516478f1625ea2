"""Read-only SQL over one version's catalog: ``TimeFReader.query`` and ``timenet query``.

A query runs on its own in-memory DuckDB connection to which the version's
``control.duckdb`` is attached ``READ_ONLY`` (as ``raw``: its stored tables,
JSON text included, are ``raw.records`` and so on), locked down before the
user's SQL is seen:

* ``enable_external_access = false``: no file, URL or database outside the
  catalog (``read_csv``, ``read_parquet``, ``read_text``, ``glob``, a quoted
  path in ``FROM``, ``ATTACH``, ``COPY``, ``EXPORT``), no extension loading
  and no scan of Python variables;
* extensions are never installed or loaded automatically;
* ``lock_configuration = true``: the query cannot ``SET`` any of this back;
* exactly one ``SELECT`` statement (``WITH`` ... ``SELECT`` included) is run,
  anything else (``ATTACH``, ``COPY``, ``PRAGMA``, ``SET``, ``INSTALL``, ...)
  is refused before it reaches DuckDB.

The user sees typed views instead of the stored JSON text:

``records(idx, id, metadata JSON)``
``signals(record_id, record_idx, ordinal, name, dtype, unit, shape BIGINT[],
rate_hz, start_ns, time_origin, timezone, irregular, length, null_count, storage)``
``annotations(id, record_id, record_idx, signal, start_ns, stop_ns, kind, label,
text, value, unit, question, answer)``
``tasks(id, record_id, record_idx, name, kind, label, text, value, unit,
question, answer)``
``lineage(kind, parent, parent_id, child_id)``

The content columns follow the content kinds: ``label`` (:class:`Label`),
``text`` (:class:`Text`), ``value`` DOUBLE and ``unit`` (:class:`Numeric`),
``question``/``answer`` (:class:`QuestionAnswer`); a column that does not
belong to a row's kind is NULL.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa

from timenet.errors import QueryError

__all__ = ["QUERY_TABLES", "run_query"]

QUERY_TABLES = ("records", "signals", "annotations", "tasks", "lineage")

_CONFIG = {"autoinstall_known_extensions": False, "autoload_known_extensions": False}
_LOCK = ("SET enable_external_access = false", "SET lock_configuration = true")

_CONTENT = """
    kind,
    CASE WHEN kind = 'label' THEN c->>'value' END AS label,
    CASE WHEN kind = 'text' THEN c->>'text' END AS text,
    CASE WHEN kind = 'numeric' THEN CAST(c->>'value' AS DOUBLE) END AS value,
    CASE WHEN kind = 'numeric' THEN c->>'unit' END AS unit,
    CASE WHEN kind = 'qa' THEN c->>'question' END AS question,
    CASE WHEN kind = 'qa' THEN c->>'answer' END AS answer"""

_VIEWS = {
    "records": "SELECT idx, id, CAST(metadata AS JSON) AS metadata FROM {db}.records",
    "signals": """SELECT r.id AS record_id, s.record_idx, s.ordinal, s.name,
        s.spec->>'dtype' AS dtype, s.spec->>'unit' AS unit,
        CAST(s.spec->'shape' AS BIGINT[]) AS shape,
        CAST(s.spec->>'rate_hz' AS DOUBLE) AS rate_hz,
        CAST(s.spec->>'start_ns' AS BIGINT) AS start_ns,
        s.spec->>'time_origin' AS time_origin, s.spec->>'timezone' AS timezone,
        s.times_file IS NOT NULL AS irregular, s.length, s.null_count, s.storage
        FROM {db}.signals s JOIN {db}.records r ON r.idx = s.record_idx""",
    "annotations": """SELECT a.id, r.id AS record_id, a.record_idx, a.signal, a.start_ns,
        a.stop_ns, {content}
        FROM (SELECT *, CAST(content AS JSON) AS c FROM {db}.annotations) a
        JOIN {db}.records r ON r.idx = a.record_idx""",
    "tasks": """SELECT t.id, r.id AS record_id, t.record_idx, t.name, {content}
        FROM (SELECT *, CAST(content AS JSON) AS c FROM {db}.tasks) t
        JOIN {db}.records r ON r.idx = t.record_idx""",
    "lineage": "SELECT kind, parent, parent_id, child_id FROM {db}.lineage",
}


def _connect(catalog: Path) -> Any:
    """An in-memory connection with the catalog attached read-only as ``raw``, the typed
    views over it, and then the lock-down (no external access, configuration locked)."""
    import duckdb

    # a connection of its own (not the reader's): DuckDB refuses two configurations for one
    # database file in one process, so the catalog is ATTACHed to an in-memory database
    con = duckdb.connect(":memory:", config=dict(_CONFIG))
    try:
        path = str(catalog).replace("'", "''")
        con.execute(f"ATTACH '{path}' AS raw (READ_ONLY)")
        present = {
            row[0]
            for row in con.execute(
                "SELECT table_name FROM information_schema.tables WHERE table_catalog = 'raw'"
            ).fetchall()
        }
        for name, body in _VIEWS.items():
            if name in present:
                con.execute(f"CREATE VIEW {name} AS {body.format(db='raw.main', content=_CONTENT)}")
        for setting in _LOCK:
            con.execute(setting)
    except BaseException:
        con.close()
        raise
    return con


def _refusal(exc: Exception) -> str:
    """Why DuckDB refused a query, in one line."""
    import duckdb

    text = " ".join(str(exc).split("\nLINE ")[0].split())
    if isinstance(exc, duckdb.PermissionException):
        return f"refused: a query may only read this version's catalog ({text})"
    if isinstance(exc, duckdb.CatalogException) and " extension" in text:
        first = text.split(". ")[0]
        return f"refused: a query cannot install or load extensions ({first})"
    return text


def run_query(catalog: Path, sql: str, *, ref: str) -> pa.Table:
    """Run one read-only ``SELECT`` over a version's catalog and return the rows as Arrow.

    Parameters
    ----------
    catalog : Path
        The version's verified ``control.duckdb``.
    sql : str
        One ``SELECT`` statement over the tables in :data:`QUERY_TABLES`.
    ref : str
        ``org/name@version`` of the version, for messages.

    Returns
    -------
    pyarrow.Table

    Raises
    ------
    QueryError
        If ``sql`` is not exactly one ``SELECT``, tries to reach anything
        outside the catalog (files, URLs, other databases, extensions,
        settings), or fails in DuckDB (syntax, unknown column, ...).
    """
    import duckdb

    con = _connect(catalog)
    try:
        try:
            statements = con.extract_statements(sql)
        except duckdb.Error as exc:
            raise QueryError(ref, sql, _refusal(exc)) from None
        if len(statements) != 1:
            raise QueryError(ref, sql, f"expected one SQL statement, got {len(statements)}")
        kind = statements[0].type
        if kind != duckdb.StatementType.SELECT:
            raise QueryError(
                ref, sql, f"only SELECT queries are allowed, not {kind.name} (read-only)"
            )
        try:
            table: pa.Table = con.sql(sql).to_arrow_table()
        except duckdb.Error as exc:
            raise QueryError(ref, sql, _refusal(exc)) from None
        return table
    finally:
        con.close()
