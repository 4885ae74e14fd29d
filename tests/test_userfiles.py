"""The one reader of users' YAML and JSON files: each failure names the file, the line and the problem."""

from __future__ import annotations

from pathlib import Path

import pytest

from emoharbor import userfiles
from emoharbor.errors import ConfigError, DataError


def test_yaml_and_json_errors_name_file_line_and_problem(tmp_path: Path) -> None:
    assert userfiles.parse("a.yaml", "x: [1, 2]\n") == {"x": [1, 2]}
    assert userfiles.parse("a.json", '{"x": 1}') == {"x": 1}
    with pytest.raises(ConfigError, match=r"^a\.yaml: not valid YAML at line 3: .*expected ','"):
        userfiles.parse("a.yaml", "ok: 1\nx: [1, 2\ny: 3\n")
    with pytest.raises(DataError, match=r"^b\.json: not valid JSON at line 2: Expecting value"):
        userfiles.parse("b.json", '{"x":\n}', DataError)
    with pytest.raises(DataError, match=r"strategy file .*none\.yaml not found$"):
        userfiles.read(tmp_path / "none.yaml", "strategy file", DataError)
    (tmp_path / "l.yaml").write_bytes(b"x: caf\xe9\n")
    with pytest.raises(ConfigError, match=r"l\.yaml: not UTF-8 text"):
        userfiles.read(tmp_path / "l.yaml", "config file")
    (tmp_path / "ok.yaml").write_text("x: 1\n", encoding="utf-8")
    assert userfiles.read(tmp_path / "ok.yaml", "config file") == {"x": 1}


def test_read_text_names_a_folder_and_drops_a_byte_order_mark(tmp_path: Path) -> None:
    with pytest.raises(DataError, match=r"ESConv file .* is a folder: give the path of a file"):
        userfiles.read_text(tmp_path, "ESConv file", DataError)
    (tmp_path / "bom.json").write_bytes(b'\xef\xbb\xbf{"x": 1}')
    assert userfiles.read(tmp_path / "bom.json", "data file") == {"x": 1}
