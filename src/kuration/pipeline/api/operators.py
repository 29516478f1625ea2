"""Operators: named pipeline-DAG macros, one layer above the component registries.

An operator is a function ``Pipeline -> Pipeline`` registered by name with
:func:`register_operator`.  Writing a new selection algorithm, filter or
scorer still means implementing that registry's contract
(``register_method``, ``register_filter``, ...); operators are for reusable
*composition*.  Every registered selection method and filter (and every
registry later exposed with :func:`expose_registry`, such as scorers) is
additionally reachable as a named operator, so ``Pipeline.apply("k-center",
limit=100)`` finds a built-in without knowing which registry holds it.  The
wrappers list the parameters the component itself declares (its
``parameters`` mapping).

``docs/operators.md`` is generated from this registry by
:func:`operators_markdown` (``kur operators --markdown``) and kept in sync
by a test.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Protocol, Self

from ...core.registry import Registry
from ...errors import RegistrationError
from ...metrics.seams import SCORERS, TRANSFORMS, registered_scorers, registered_transforms
from ...output.presets import get_preset, registered_presets
from ...selection.filters import get_filter, registered_filters
from ...selection.methods import get_method, registered_methods
from ...tools.analyzers import get_analyzer, registered_analyzers

__all__ = [
    "Operator",
    "expose_registry",
    "get_operator",
    "operators_markdown",
    "register_operator",
    "registered_operators",
]


class PipelineBuilder(Protocol):
    """What an operator receives and returns: a :class:`~kuration.Pipeline` (its ``apply``
    checks the class at run time); the built-in wrappers call these builders."""

    def method(self, name: str, **params: Any) -> Self: ...
    def filter(self, name: str, **params: Any) -> Self: ...
    def score(self, name: str, **params: Any) -> Self: ...
    def transform(self, name: str, **params: Any) -> Self: ...


OperatorFn = Callable[..., PipelineBuilder]


@dataclass(frozen=True)
class Operator:
    """A registered operator.

    Attributes
    ----------
    name : str
    fn : callable
        ``fn(pipeline, **params) -> Pipeline``.
    params : mapping of str to str
        Parameter name -> one-line description.
    doc : str
    kind : str
        ``operator`` for a user macro, else the registry a wrapper exposes
        (``method``, ``filter``, ``scorer``, ...).
    builtin : bool
        Defined by kuration itself (listed in ``docs/operators.md``).
    """

    name: str
    fn: OperatorFn
    params: Mapping[str, str] = field(default_factory=dict)
    doc: str = ""
    kind: str = "operator"
    builtin: bool = False


@dataclass(frozen=True)
class _Exposed:
    kind: str
    names: Callable[[], Iterable[str]]
    get: Callable[[str], Any]
    apply: Callable[..., PipelineBuilder]
    params: Mapping[str, str] = field(default_factory=dict)


_OPERATORS: Registry[Operator] = Registry("operator")
_EXPOSED: dict[str, _Exposed] = {}


def register_operator(
    name: str,
    fn: OperatorFn,
    *,
    params: Mapping[str, str] | None = None,
    doc: str = "",
    clobber: bool = False,
) -> Operator:
    """Register the pipeline macro ``fn(pipeline, **params) -> Pipeline`` as ``name``.

    Raises
    ------
    RegistrationError
        ``fn`` is not callable or ``params`` is not a mapping of names to descriptions
        (a ``TypeError``), or ``name`` is taken (by an operator or an exposed component)
        and ``clobber`` is false (a ``ValueError``).
    """
    if not callable(fn):
        raise RegistrationError(f"operator {name!r}: fn must be callable")
    params = dict(params or {})
    if not all(isinstance(k, str) and isinstance(v, str) for k, v in params.items()):
        raise RegistrationError(f"operator {name!r}: params maps names to descriptions")
    _sync()
    op = Operator(name, fn, MappingProxyType(params), doc or (fn.__doc__ or "").strip())
    _OPERATORS.register(name, op, clobber=clobber)
    return op


def expose_registry(
    kind: str,
    names: Callable[[], Iterable[str]],
    get: Callable[[str], Any],
    apply: Callable[..., PipelineBuilder],
    params: Mapping[str, str] | None = None,
) -> None:
    """Expose every component of a registry as a named operator.

    ``apply(pipeline, name, **params)`` adds the component ``name`` to a
    pipeline; ``get(name)`` returns the component, whose ``parameters``
    mapping (else ``params``, the builder's keywords) and docstring describe the
    wrapper.  A registration that wraps its code (a scorer's or transform's
    ``implementation``, a factory class) is described by that code.  Wrappers are
    created lazily, for the names registered at lookup time.
    """
    _EXPOSED[kind] = _Exposed(kind, names, get, apply, dict(params or {}))


def _wrapper(exp: _Exposed, name: str) -> Operator:
    obj = exp.get(name)

    def fn(pipeline: PipelineBuilder, **params: Any) -> PipelineBuilder:
        return exp.apply(pipeline, name, **params)

    impl = getattr(obj, "implementation", obj)
    subject = impl if isinstance(impl, type) else type(impl)
    builtin = subject.__module__.startswith("kuration.")
    params = dict(getattr(obj, "parameters", None) or exp.params)
    return Operator(
        name, fn, MappingProxyType(params), _first_paragraph(subject), exp.kind, builtin
    )


def summary(obj: Any) -> str:
    """The first paragraph of the docstring of ``obj``'s type, on one line."""
    return _first_paragraph(type(obj))


def _first_paragraph(cls: type) -> str:
    text = (cls.__doc__ or "").strip().split("\n\n", 1)[0]
    return " ".join(line.strip() for line in text.splitlines())


def _sync() -> None:
    """Register a wrapper for every exposed component that has none yet."""
    for exp in _EXPOSED.values():
        for name in exp.names():
            if name in _OPERATORS:
                continue
            _OPERATORS.register(name, _wrapper(exp, name))


def get_operator(name: str) -> Operator:
    """The operator ``name`` (raises ``UnknownNameError``, a ``KeyError``, with close matches)."""
    _sync()
    return _OPERATORS.get(name)


def registered_operators() -> tuple[str, ...]:
    """Every operator name, built-in wrappers included, sorted."""
    _sync()
    return _OPERATORS.names()


def _table(rows: list[tuple[str, str, str]]) -> list[str]:
    out = ["| name | parameters | description |", "| --- | --- | --- |"]
    for name, params, doc in rows:
        out.append(f"| `{name}` | {params} | {doc} |")
    return out


def _param_text(params: Mapping[str, str]) -> str:
    if not params:
        return "-"
    return "<br>".join(f"`{k}`: {_escape(v)}" for k, v in params.items())


def _escape(text: str) -> str:
    return text.replace("|", "\\|")


def operators_markdown(*, builtin_only: bool = True) -> str:
    """``docs/operators.md``: every (built-in) operator, analyzer and preset with its parameters."""
    _sync()
    lines = [
        "# Operators",
        "",
        "<!-- generated by `kur operators --markdown` from the registries; "
        "tests/kuration/pipeline/api/test_operators.py keeps it in sync -->",
        "",
        "Every built-in selection method and filter is a named operator: "
        '`Pipeline().…apply("<name>", **params)` adds it without naming its registry. '
        "Methods replace the strategy's method; filters are appended to its filters. "
        "Implementing a *new* method, filter or scorer still uses its own registry "
        "(`register_method`, `register_filter`, ...); `register_operator` registers "
        "a reusable pipeline macro.",
        "",
    ]
    ops = [_OPERATORS.get(n) for n in _OPERATORS.names()]
    for kind in sorted({o.kind for o in ops}):
        chosen = [o for o in ops if o.kind == kind and (o.builtin or not builtin_only)]
        if not chosen:
            continue
        lines += [f"## {kind} operators", ""]
        lines += _table([(o.name, _param_text(o.params), _escape(o.doc)) for o in chosen])
        lines.append("")
    lines += ["## analyzers (`Pipeline.enrich(name, **params)`)", ""]
    rows = []
    for n in registered_analyzers():
        a = get_analyzer(n)
        if builtin_only and not type(a).__module__.startswith("kuration."):
            continue
        rows.append((n, _param_text(getattr(a, "parameters", {})), _escape(summary(a))))
    lines += [*_table(rows), ""]
    lines += ['## output presets (`"output": {"preset": name, ...}`)', ""]
    prow = []
    for n in registered_presets():
        pr = get_preset(n)
        policy = ", ".join(f"`{k}`={v}" for k, v in pr.policy.items() if k != "modalities")
        prow.append((n, policy, pr.doc))
    lines += _table(prow)
    return "\n".join(lines) + "\n"


def _apply_method(p: PipelineBuilder, name: str, **params: Any) -> PipelineBuilder:
    return p.method(name, **params)


def _apply_filter(p: PipelineBuilder, name: str, **params: Any) -> PipelineBuilder:
    return p.filter(name, **params)


def _apply_scorer(p: PipelineBuilder, name: str, **params: Any) -> PipelineBuilder:
    return p.score(name, **params)


def _apply_transform(p: PipelineBuilder, name: str, **params: Any) -> PipelineBuilder:
    return p.transform(name, **params)


expose_registry("method", registered_methods, get_method, _apply_method)
expose_registry("filter", registered_filters, get_filter, _apply_filter)
expose_registry(
    "scorer",
    registered_scorers,
    SCORERS.get,
    _apply_scorer,
    {"params": "the scorer's own parameters (a mapping)", "output": "the feature it writes"},
)
expose_registry(
    "transform",
    registered_transforms,
    TRANSFORMS.get,
    _apply_transform,
    {
        "inputs": "role -> `field:`/`feature:`/`media:` input",
        "params": "the transform's own parameters (a mapping)",
        "outputs": "the features it writes",
    },
)
