"""Dataset references and the ordering of version strings.

A reference is ``org/name`` or ``org/name@version``. Each part starts with a
letter or digit and then uses letters, digits, ``.``, ``_``, ``-`` (and ``+``
in versions), so a reference can never escape a registry directory.

Version ordering (used when a reference omits the version) follows PEP 440 in
a simplified form: an optional ``v`` prefix, a dotted numeric release compared
number by number with trailing zeros ignored (``1.10 > 1.9``, ``1.0 == 1.0.0``),
then ``devN < aN < bN < rcN < final < postN``, then a ``+local`` label compared as
text. Strings that do not parse (``"latest-draft"``) sort before every parseable
version, among themselves alphabetically. Dates written ``2024.01.15`` order
naturally.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from timenet.errors import InvalidRefError

__all__ = ["Ref", "parse_ref", "version_key"]

_PART = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
_VERSION = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._+-]*$")
_PEP440 = re.compile(
    r"""^v?(?P<release>\d+(?:\.\d+)*)
    (?:[-_.]?(?P<pre>a|alpha|b|beta|c|rc|pre|preview)[-_.]?(?P<pren>\d*))?
    (?:[-_.]?(?:post|rev|r)[-_.]?(?P<post>\d*))?
    (?:[-_.]?dev[-_.]?(?P<dev>\d*))?
    (?:\+(?P<local>[a-z0-9._-]+))?$""",
    re.IGNORECASE | re.VERBOSE,
)
_PRE_RANK = {"a": 0, "alpha": 0, "b": 1, "beta": 1, "c": 2, "rc": 2, "pre": 2, "preview": 2}
_BIG = 1 << 62


@dataclass(frozen=True)
class Ref:
    """A parsed dataset reference.

    Attributes
    ----------
    org, name : str
        Publisher and dataset name.
    version : str or None
        Exact version, or ``None`` for "the latest".
    """

    org: str
    name: str
    version: str | None = None

    @property
    def key(self) -> str:
        """``org/name`` without a version."""
        return f"{self.org}/{self.name}"

    def with_version(self, version: str) -> Ref:
        """Return a copy pinned to ``version``."""
        return Ref(self.org, self.name, version)

    def __str__(self) -> str:
        return self.key if self.version is None else f"{self.key}@{self.version}"


def check_part(value: str, what: str, ref: str) -> str:
    """Validate one path-safe component of a reference."""
    pattern = _VERSION if what == "version" else _PART
    if not isinstance(value, str) or not pattern.match(value) or value in {".", ".."}:
        raise InvalidRefError(ref, f"{what} {value!r} must match {pattern.pattern}")
    return value


def parse_ref(ref: str | Ref) -> Ref:
    """Parse ``org/name`` or ``org/name@version``.

    Raises
    ------
    InvalidRefError
        If the string has the wrong shape or unsafe characters.
    """
    if isinstance(ref, Ref):
        return ref
    if not isinstance(ref, str):
        raise InvalidRefError(repr(ref), "a reference must be a string")
    body, sep, version = ref.partition("@")
    parts = body.split("/")
    if len(parts) != 2:
        raise InvalidRefError(ref, "expected org/name or org/name@version")
    org = check_part(parts[0], "org", ref)
    name = check_part(parts[1], "name", ref)
    if sep:
        return Ref(org, name, check_part(version, "version", ref))
    return Ref(org, name, None)


def version_key(version: str) -> tuple[object, ...]:
    """Sort key implementing the ordering described in the module docstring.

    Examples
    --------
    >>> sorted(["1.10", "1.9", "1.9rc1", "1.9.dev0", "2.0.post1", "2.0"], key=version_key)
    ['1.9.dev0', '1.9rc1', '1.9', '1.10', '2.0', '2.0.post1']
    """
    m = _PEP440.match(version)
    if m is None:
        return (0, version)
    release = [int(x) for x in m["release"].split(".")]
    while len(release) > 1 and release[-1] == 0:
        release.pop()
    pre, post, dev = m["pre"], m["post"], m["dev"]
    if pre is not None:
        pre_key: tuple[int, int] = (_PRE_RANK[pre.lower()], int(m["pren"] or 0))
    elif dev is not None and post is None:
        pre_key = (-1, 0)
    else:
        pre_key = (3, 0)
    post_key = -1 if post is None else int(post or 0)
    dev_key = _BIG if dev is None else int(dev or 0)
    local = m["local"] or ""
    return (1, tuple(release), pre_key, post_key, dev_key, local)
