"""Every JSON and YAML document TimeNet reads is parsed strictly: duplicate keys and
non-finite numbers are refused, naming the document and the key."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest
from tn_helpers import make_card

import timenet as tn
from timenet._jsonio import load_yaml_strict, loads_strict
from timenet.build.errors import RawInputError
from timenet_connectors._common import gunzip_json


def _duplicate_first_sha(manifest: Path, value: str, *, first: bool) -> None:
    """Give the first file entry a second ``"sha256"`` key, before or after the real one."""
    text = manifest.read_text()
    m = re.search(r'"sha256": "([0-9a-f]{64})"', text)
    assert m is not None
    real = m.group(0)
    extra = f'"sha256": "{value}"'
    both = f"{extra}, {real}" if first else f"{real}, {extra}"
    manifest.write_text(text[: m.start()] + both + text[m.end() :])


def test_manifest_with_a_duplicate_sha256_does_not_open(demo: Path) -> None:
    manifest = demo / "manifest.json"
    # the bogus value first and the real one last: json's last-wins would open and verify it
    _duplicate_first_sha(manifest, "0" * 64, first=True)
    with pytest.raises(tn.ManifestError, match="duplicate key 'sha256'") as exc:
        tn.TimeFReader.open(demo)
    assert exc.value.path == str(manifest)
    with pytest.raises(tn.ManifestError, match="duplicate key 'sha256'"):
        tn.TimeNet([demo.parents[2]]).open("acme/demo@1.0.0")


def test_manifest_duplicate_equal_values_and_other_keys_are_refused(demo: Path) -> None:
    manifest = demo / "manifest.json"
    good = manifest.read_text()
    sha = re.search(r'"sha256": "([0-9a-f]{64})"', good).group(1)  # type: ignore[union-attr]
    _duplicate_first_sha(manifest, sha, first=False)  # even the same value twice
    with pytest.raises(tn.ManifestError, match="duplicate key 'sha256'"):
        tn.TimeFReader.open(demo)
    manifest.write_text(good.replace('"card": {', '"card": {"org": "evil", ', 1))
    with pytest.raises(tn.ManifestError, match="duplicate key 'org'"):
        tn.TimeFReader.open(demo)
    manifest.write_text(good)
    assert tn.TimeFReader.open(demo).manifest.card.org == "acme"


@pytest.mark.parametrize("constant", ["NaN", "Infinity", "-Infinity"])
def test_manifest_with_a_non_finite_number_is_refused(demo: Path, constant: str) -> None:
    manifest = demo / "manifest.json"
    text = manifest.read_text()
    m = re.search(r'"size": (\d+)', text)
    assert m is not None
    manifest.write_text(text[: m.start(1)] + constant + text[m.end(1) :])
    with pytest.raises(tn.ManifestError, match="non-finite number"):
        tn.TimeFReader.open(demo)


def test_manifest_from_json_parses_strictly() -> None:
    with pytest.raises(tn.ManifestError, match=r"bad manifest x\.json: duplicate key 'a'"):
        tn.Manifest.from_json('{"a": 1, "a": 2}', path="x.json")
    with pytest.raises(tn.ManifestError, match="not valid JSON"):
        tn.Manifest.from_json("{", path="x.json")


def test_dataset_card_yaml_with_duplicate_keys_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "dataset.yaml"
    text = tn.DatasetCard(**make_card()).to_yaml()
    path.write_text(text + "license: MIT\n")  # a second license, last line
    with pytest.raises(tn.DocumentError, match=r"duplicate key 'license' at line \d+") as exc:
        tn.DatasetCard.from_yaml(path)
    assert exc.value.path == str(path) and exc.value.key == "license"
    nested = "org: acme\nname: demo\nversion: '1'\nlicense: MIT\naccess:\n  level: open\n"
    path.write_text(nested + "  level: credentialed\n")
    with pytest.raises(tn.DocumentError, match="duplicate key 'level'"):
        tn.DatasetCard.from_yaml(path)
    path.write_text(text)
    assert tn.DatasetCard.from_yaml(path) == tn.DatasetCard(**make_card())


def test_yaml_non_finite_numbers_and_syntax_are_refused(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    path.write_text("a: [1, .nan]\n")
    with pytest.raises(tn.DocumentError, match=r"non-finite number at \$\.a\.1"):
        load_yaml_strict(path)
    path.write_text("a: [1\n")
    with pytest.raises(tn.DocumentError, match="not valid YAML"):
        load_yaml_strict(path)


def test_loads_strict() -> None:
    assert loads_strict('{"a": {"b": [1, 2.5]}}', what="x") == {"a": {"b": [1, 2.5]}}
    with pytest.raises(tn.DocumentError, match=r"^x: duplicate key 'b'") as exc:
        loads_strict('{"a": {"b": 1, "b": 1}}', what="x")
    assert exc.value.key == "b"
    with pytest.raises(tn.DocumentError, match="non-finite number NaN"):
        loads_strict('{"a": NaN}', what="x")
    assert np.isnan(loads_strict('{"a": NaN}', what="x", allow_nan=True)["a"])
    with pytest.raises(tn.DocumentError, match="duplicate key"):
        loads_strict('{"a": NaN, "a": 1}', what="x", allow_nan=True)
    with pytest.raises(tn.DocumentError, match="not valid JSON"):
        loads_strict(b"\xff", what="x")


def test_connector_raw_json_refuses_duplicate_keys() -> None:
    import gzip

    assert gunzip_json(gzip.compress(b'[{"a": NaN}]'), "raw.json.gz")[0]["a"] != 0
    with pytest.raises(RawInputError, match="duplicate key 'a'"):
        gunzip_json(gzip.compress(b'[{"a": 1, "a": 2}]'), "raw.json.gz")


def test_writer_refuses_what_would_not_read_back(tmp_path: Path) -> None:
    with tn.TimeFWriter(tmp_path / "reg", make_card()) as w:
        r = w.add_record("r", {"k": 1})
        for bad in (float("nan"), float("inf"), "3"):
            with pytest.raises(tn.SchemaError, match="Numeric value must be a finite number"):
                w.add_annotation(r, tn.Numeric(bad), start_ns=0)  # type: ignore[arg-type]
            with pytest.raises(tn.SchemaError, match="Numeric value must be a finite number"):
                w.add_task(r, "t", tn.Numeric(bad))  # type: ignore[arg-type]
        with pytest.raises(tn.SchemaError, match="record 'r2'.*not JSON-serialisable"):
            w.add_record("r2", {"k": float("inf")})
        w.add_signal(r, "x", np.zeros(3, np.float32), tn.SignalSpec("float32", "m", rate_hz=1.0))
    version = tmp_path / "reg" / "acme" / "demo" / "1.0.0"
    reader = tn.TimeFReader.open(version)
    assert reader.records()[0].metadata == {"k": 1}
    assert reader.annotations() == []
    assert json.loads((version / "manifest.json").read_text())["card"]["org"] == "acme"


def test_catalog_json_is_parsed_strictly(demo: Path) -> None:
    import duckdb

    con = duckdb.connect(str(demo / "control.duckdb"))
    con.execute("""UPDATE records SET metadata = '{"subject": 0, "subject": 1}' WHERE idx = 0""")
    con.close()
    # verification sees the changed file first; unverified, the record is refused when read
    reader = tn.TimeFReader.open(demo, verify=False)
    with pytest.raises(tn.DocumentError, match="record 'rec-0' metadata: duplicate key 'subject'"):
        reader.records()
