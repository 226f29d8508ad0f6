"""Bytes that are not text reach graphmem three ways: arguments a terminal or script
passed in another encoding (Python reads them as lone surrogates), JSON ``\\ud800``
escapes that encode half a character, and files nested past what a parser can follow.
Each is a clear error naming the argument, file, message or query, exits 1 or 2, and
leaves the store as it was; no traceback."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from graphmem import GraphmemError, InvalidInputError, MemoryStore
from graphmem.cli import cli

ENV = {**os.environ, "GRAPHMEM_EMBEDDER": "hashing"}


def test_arguments_that_are_not_utf8_are_named(tmp_path: Path) -> None:
    db = tmp_path / "db"
    done = subprocess.run([sys.executable, "-m", "graphmem", "--db", str(db), "add",
                           b"caf\xe9 au lait"], env=ENV, capture_output=True)
    assert done.returncode == 2, done.stderr
    assert done.stderr.decode() == (
        "error: argument 4 (caf\\xe9 au lait) is not UTF-8 text: graphmem reads its "
        "arguments and settings as UTF-8; check the terminal's or the script's encoding\n")
    assert not db.exists()
    elsewhere = os.fsencode(tmp_path) + b"/caf\xe9"  # a setting, not an argument
    done = subprocess.run([sys.executable, "-m", "graphmem", "add", "a note"],
                          env={**ENV, "GRAPHMEM_DB": os.fsdecode(elsewhere)},
                          capture_output=True)
    assert done.returncode == 2 and done.stderr.decode().startswith(
        f"error: $GRAPHMEM_DB ({tmp_path}/caf\\xe9) is not UTF-8 text"), done.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == []
    made = CliRunner().invoke(cli, ["--db", str(db), "--embedder", "hashing", "init"])
    assert made.exit_code == 0, made.output
    for args in (["show", "urn:\udce9"], ["--db", str(tmp_path / "x\udce9"), "stats"],
                 ["--json", "recall", "th\udce9"]):
        result = CliRunner().invoke(cli, ["--db", str(db), *args])
        assert result.exit_code == 2 and "is not UTF-8 text" in result.output, result.output
        assert "Traceback" not in result.output
    as_json = CliRunner().invoke(cli, ["--db", str(db), "--json", "recall", "th\udce9"])
    assert json.loads(as_json.stderr)["error"] == "usage"


def test_half_characters_and_deep_nesting_in_a_conversation_file(tmp_path: Path) -> None:
    db = tmp_path / "db"
    with MemoryStore(db, embedder="hashing") as store:
        store.add("The spare key is under the blue pot.")
    bad = {
        "half.json": '[{"role": "user", "content": "I adopted a dog"},'
                     ' {"role": "user", "content": "named R\\ud800ex."}]',
        "speaker.json": '[{"speaker": "Jo\\udc00", "text": "I moved to Porto."}]',
        "deep.json": "[" * 100_000,
        "huge.json": '[{"role": "user", "text": "hi", "timestamp": 1' + "0" * 5000 + "}]",
    }
    said = {
        "half.json": "messages[1].text holds U+D800 at character 8, which is "
                     "not text",
        "speaker.json": "messages[0].speaker holds U+DC00 at character 3",
        "deep.json": "JSON nested too deeply to be a conversation",
        "huge.json": "not valid JSON: Exceeds the limit (4300 digits)",
    }
    for name, text in bad.items():
        (tmp_path / name).write_text(text, encoding="utf-8")
        result = CliRunner().invoke(cli, ["--db", str(db), "import", "conversation",
                                          "--session", "s1", str(tmp_path / name)])
        assert result.exit_code == 1, result.output
        assert result.stderr.startswith(f"error: {tmp_path / name}: "), result.stderr
        assert said[name] in result.stderr, result.stderr
    with MemoryStore(db, embedder="hashing") as store:
        assert [m.text for m in store.memories()] == ["The spare key is under the blue pot."]
        with pytest.raises(InvalidInputError, match=r"session_id holds U\+DCE9"):
            store.add_conversation(["I moved to Porto."], session_id="s\udce9")
        with pytest.raises(InvalidInputError, match=r"text holds U\+D800"):
            store.add("R\ud800ex")
        with pytest.raises(InvalidInputError, match=r"owner: holds U\+DCE9 at character 3"):
            store.add("Rex is a dog", owner="bo\udce9")
        with pytest.raises(InvalidInputError, match="owner: is empty: leave it out"):
            store.add("Rex is a dog", owner=" ")
        with pytest.raises(InvalidInputError, match=r"tags: an entry holds U\+D800"):
            store.add("Rex is a dog", tags=["d\ud800g"])
        with pytest.raises(InvalidInputError, match=r"provenance: holds U\+DC00 at character "
                                                    r"\d+ of its JSON"):
            store.add("Rex is a dog", provenance={"from\udc00": "chat"})
        with pytest.raises(InvalidInputError, match=r"tags holds U\+DC00"):
            store.update(store.memories()[0].id, tags=["b\udc00"])
        assert len(store.memories()) == 1


@pytest.mark.parametrize(("qrels", "said"), [
    ("{bad", "not valid JSON: Expecting property name enclosed in double quotes at line 1"),
    ("[]", "qrels are a JSON object of at least one query -> [relevant ids]; this file "
           "holds a JSON array"),
    ("{}", "holds a JSON object with no query"),
    ('{"where is the key?": "urn:a"}', "query 'where is the key?': the relevant ids are a "
                                      "non-empty JSON array of memory ids, not a string"),
    ('{"where is the key?": [1, 2]}', "query 'where is the key?': a relevant id is not a "
                                     "non-empty string"),
])
def test_a_bad_qrels_file_is_named(tmp_path: Path, qrels: str, said: str) -> None:
    ump = tmp_path / "m.json"
    ump.write_text(json.dumps([{"id": "urn:a", "text": "The key is under the pot.",
                                "kind": "episodic"}]), encoding="utf-8")
    path = tmp_path / "qrels.json"
    path.write_text(qrels, encoding="utf-8")
    result = CliRunner().invoke(cli, ["eval", "run", "--corpus", "ump", str(ump), "--qrels",
                                      str(path), "--presets", "fulltext", "--no-plots",
                                      "--out", str(tmp_path / "out"), "--embedder", "hashing"])
    assert result.exit_code == 1, result.output
    assert result.stderr.startswith(f"error: {path}: ") and said in result.stderr
    assert "Traceback" not in result.output


@pytest.mark.parametrize("read", ["chats", "locomo", "longmemeval"])
def test_a_number_too_long_for_python_is_named_not_a_traceback(tmp_path: Path,
                                                               read: str) -> None:
    """A JSON integer of more than 4,300 digits is a clear error naming the file."""
    from ingest.chats import load_chats
    from ingest.locomo import load_locomo
    from ingest.longmemeval import load_longmemeval

    path = tmp_path / "huge.json"
    path.write_text('[{"sample_id": 1' + "0" * 5000 + "}]", encoding="utf-8")
    loads = {"chats": load_chats, "locomo": load_locomo, "longmemeval": load_longmemeval}
    with pytest.raises(GraphmemError, match="4300 digits") as caught:
        loads[read](path)
    assert str(path) in str(caught.value)
