"""The core's layout stays navigable (issue 33): no import circle between the files of
``crates/xlat/src``, no non-test source file over ``MAX_LINES`` lines, and the folders that
docs/architecture.md draws exist. The rules of the graph (what counts as an edge) are in
``scripts/rust_imports.py``."""

from __future__ import annotations

from pathlib import Path

from conftest import load_script

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "crates" / "xlat" / "src"


def _tool():
    return load_script("scripts/rust_imports.py")


def test_no_two_files_of_the_core_import_each_other_even_through_others():
    tool = _tool()
    found = tool.circles(tool.Crate(SRC).edges())
    assert found == [], "import circles: " + "; ".join(
        " <-> ".join(str(p.relative_to(SRC)) for p in c) for c in found
    )


def test_no_source_file_of_the_core_is_longer_than_the_limit():
    tool = _tool()
    long = tool.long_files(tool.Crate(SRC))
    assert long == [], [(str(p.relative_to(SRC)), n) for p, n in long]


def test_the_checker_sees_a_circle_it_is_shown(tmp_path):
    # The checker itself must be able to fail: a two-file circle and a re-export that is not one.
    (tmp_path / "lib.rs").write_text("pub mod a;\npub mod b;\npub mod c;\n")
    (tmp_path / "a.rs").write_text("use crate::b::B;\npub struct A(B);\n")
    (tmp_path / "b.rs").write_text("pub struct B;\npub fn f(_: &crate::a::A) {}\n")
    (tmp_path / "c.rs").write_text(
        "pub use crate::a::A;\n#[cfg(test)]\nmod t { use crate::b::B; }\n"
    )
    tool = _tool()
    found = tool.circles(tool.Crate(tmp_path).edges())
    assert [[p.name for p in c] for c in found] == [["a.rs", "b.rs"]]


def test_the_folders_of_the_architecture_page_exist():
    for folder in ("engine", "os/policies", "os/daemons", "timing/ooo", "designs"):
        assert (SRC / folder).is_dir(), folder
