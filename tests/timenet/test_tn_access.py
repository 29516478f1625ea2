"""Access requirements: a child's effective access, recorded, shown and enforced until accepted."""

from __future__ import annotations

import json
from pathlib import Path
from typing import ClassVar

import numpy as np
import pytest

import timenet as tn
from timenet import build as tb
from timenet.cli import main

PARENT = "acme/demo@1.0.0"
DUA = "Sign the ACME data use agreement"


def _write_parent(root: Path, level: str = "credentialed") -> Path:
    card = tn.DatasetCard(
        org="acme",
        name="demo",
        version="1.0.0",
        license="other",
        access=tn.AccessRequirements(level=level, terms=DUA, url="https://acme.test/dua"),
    )
    with tn.TimeFWriter(root, card) as w:  # by hand: the manifest records no effective access
        for i in range(2):
            w.add_record(f"rec-{i}", {"subject": i})
            w.add_signal(
                f"rec-{i}",
                "ecg",
                np.arange(100, dtype=np.float32) + i,
                tn.SignalSpec("float32", "mV", rate_hz=100.0),
            )
            w.add_task(f"rec-{i}", "rhythm", tn.Label("af"))
    return root / "acme" / "demo" / "1.0.0"


class Child(tb.Connector):
    """A registration-only child of the credentialed demo release."""

    own: ClassVar[tn.AccessRequirements] = tn.AccessRequirements(
        level="registration", terms="Cite the child"
    )

    def metadata(self) -> tn.DatasetCard:
        return tn.DatasetCard(
            org="acme",
            name="child",
            version="1.0",
            license="CC-BY-4.0",
            access=self.own,
            parents=(PARENT,),
        )

    def download(self) -> None:
        pass

    def convert(self, writer: tn.TimeFWriter) -> None:
        self.parents[PARENT].import_records(writer)


@pytest.fixture
def terms_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "config" / "accepted-terms.json"
    monkeypatch.setenv("TIMENET_TERMS_FILE", str(path))
    return path


def test_effective_access_is_the_most_restrictive_and_recorded(tmp_path: Path) -> None:
    reg = tmp_path / "reg"
    _write_parent(reg)
    m = tb.run_pipeline(Child, reg).manifest
    assert m.card.access.level == "registration"  # the card keeps the child's own requirement
    assert m.access is not None and m.access == m.effective_access
    assert m.access.level == "credentialed"
    assert [s.ref for s in m.access.sources] == ["acme/child@1.0", PARENT]
    assert DUA in m.access.terms and "Cite the child" in m.access.terms
    assert m.access.url == "https://acme.test/dua"
    on_disk = json.loads((reg / "acme/child/1.0/manifest.json").read_text())
    assert on_disk["access"]["level"] == "credentialed"
    # an open parent adds nothing; a restricted own requirement wins over a credentialed parent
    combine = tn.EffectiveAccess.combine
    own = tn.AccessRequirements(level="restricted", terms="ours")
    parent = combine(PARENT, tn.AccessRequirements(level="credentialed", terms=DUA))
    assert combine("a/b@1", own, (parent, parent)).level == "restricted"
    assert [s.ref for s in combine("a/b@1", own, (parent, parent)).sources] == ["a/b@1", PARENT]
    assert combine(
        "a/b@1", tn.AccessRequirements(), (combine(PARENT, tn.AccessRequirements()),)
    ) == (tn.EffectiveAccess(level="open", sources=()))


def test_open_fails_until_terms_are_accepted(
    tmp_path: Path, terms_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    reg = tmp_path / "reg"
    _write_parent(reg)
    tb.run_pipeline(Child, reg)
    client = tn.TimeNet([reg], auto_build=False)
    with pytest.raises(tn.TermsNotAcceptedError) as info:
        client.open("acme/child@1.0")
    err = info.value
    assert isinstance(err, PermissionError)
    assert (err.ref, err.level, err.sources) == (
        "acme/child@1.0",
        "credentialed",
        ("acme/child@1.0", PARENT),
    )
    assert (
        DUA in str(err)
        and "accept_terms" in str(err)
        and "timenet accept acme/child@1.0" in str(err)
    )
    for attempt in (lambda: client.load("acme/child"), lambda: client.open_torch("acme/child")):
        with pytest.raises(tn.TermsNotAcceptedError):
            attempt()
    with pytest.raises(tn.TermsNotAcceptedError):
        client.download("acme/child@1.0", tmp_path / "copy")
    assert not (tmp_path / "copy").exists()
    with pytest.raises(tn.TermsNotAcceptedError, match="acme/demo@1.0.0 requires"):
        client.open(PARENT)  # a manifest without a recorded access: its card's applies
    assert client.info("acme/child").access.level == "credentialed"  # reading the terms is free

    assert main(["info", "--registry", str(reg), "acme/child"]) == 0
    out = capsys.readouterr().out
    assert "access=credentialed" in out and "terms (not accepted)" in out and DUA in out

    once = tn.TimeNet([reg], auto_build=False, accept_terms=["acme/child@1.0"])
    assert once.open("acme/child").signal("rec-1", "ecg").to_numpy()[0] == 1.0
    assert not terms_file.exists()  # accept_terms= is for that client only

    accepted = client.accept_terms("acme/child")
    assert accepted.level == "credentialed"
    assert json.loads(terms_file.read_text())["acme/child@1.0"]["sha256"] == accepted.digest()
    later = tn.TimeNet([reg], auto_build=False)
    assert len(later.load("acme/child@1.0").records()) == 2
    assert main(["info", "--registry", str(reg), "acme/child"]) == 0
    assert "terms (accepted)" in capsys.readouterr().out
    with pytest.raises(tn.TermsNotAcceptedError):
        later.open(PARENT)  # accepting the child does not accept the parent release

    # an acceptance holds for the requirement it was given for, not for other terms
    data = json.loads(terms_file.read_text())
    data["acme/child@1.0"]["sha256"] = "0" * 64
    terms_file.write_text(json.dumps(data))
    with pytest.raises(tn.TermsNotAcceptedError):
        tn.TimeNet([reg], auto_build=False).open("acme/child@1.0")
    terms_file.write_text('{"acme/child@1.0": {"sha256": "a", "sha256": "b"}}')
    with pytest.raises(tn.DocumentError, match="duplicate key"):
        tn.TimeNet([reg], auto_build=False).open("acme/child@1.0")


def test_cli_accept(tmp_path: Path, terms_file: Path, capsys: pytest.CaptureFixture[str]) -> None:
    reg = tmp_path / "reg"
    _write_parent(reg)
    assert main(["query", "--registry", str(reg), PARENT, "SELECT 1 AS x"]) == 1
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 1 and err[0].startswith("timenet: error: acme/demo@1.0.0 requires accepting")
    assert main(["accept", "--registry", str(reg), "acme/demo"]) == 0
    out = capsys.readouterr().out
    assert f"accepted (credentialed): {PARENT}: {DUA}" in out and str(terms_file) in out
    assert main(["query", "--registry", str(reg), PARENT, "SELECT count(*) AS n FROM records"]) == 0
    assert capsys.readouterr().out.splitlines() == ["n", "2"]
    open_reg = tmp_path / "open"
    _write_parent(open_reg, level="open")
    assert main(["accept", "--registry", str(open_reg), PARENT]) == 0
    assert "there are no terms to accept" in capsys.readouterr().out
    assert main(["accept", "--registry", str(open_reg), "acme/none"]) == 1
    assert "acme/none" in capsys.readouterr().err
