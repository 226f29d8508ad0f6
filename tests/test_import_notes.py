"""What an import does not read is said, and files that begin with a byte order mark (as
editors on Windows write UTF-8) are read like the others: by the Python API and the CLI."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from graphmem import MemoryStore
from graphmem.cli import cli
from ingest.chats import load_chats
from ingest.markdown import import_markdown
from ingest.ump import import_ump

BOM = "\ufeff"


def record(memory_id: str, text: str) -> dict[str, object]:
    return {"ump": "0.1", "id": memory_id, "kind": "semantic", "body": {"text": text}}


def tree(root: Path, files: dict[str, str]) -> Path:
    memory = root / "workspace" / "memory"
    memory.mkdir(parents=True)
    for name, text in files.items():
        (memory / name).write_text(text, encoding="utf-8")
    return root


def test_markdown_import_names_the_file_it_skips_and_the_bullets_outside_a_section(
        tmp_path: Path) -> None:
    root = tree(tmp_path / "notes", {
        "2026-02-30.md": "## Decisions\n- chose the blue tiles [keep]\n",
        "2026-11-3.md": "## Decisions\n- a day not padded\n",
        "notes.MD": "## Decisions\n- not a daily\n",
        "todo.txt": "- not markdown\n",
        "2026-03-01.md": "# Memory\n- the plumber comes Friday\n\n## Decisions\n"
                         "- booked the plumber [keep]\n",
    })
    with MemoryStore(str(tmp_path / "db"), embedder="hashing") as store:
        result = import_markdown(store, root)
        texts = sorted(m.text for m in store.memories())
    assert texts == ["booked the plumber [keep]"]
    assert result.skipped == [
        "workspace/memory/2026-02-30.md: not imported, its name is no date",
        "workspace/memory/2026-11-3.md: not imported, its name is not YYYY-MM-DD.md",
        "workspace/memory/notes.MD: not imported, its name is not YYYY-MM-DD.md",
        "workspace/memory/2026-03-01.md: line 2: not imported, a bullet before the first "
        "## section"]


def test_the_cli_warns_of_what_it_skipped_and_json_lists_it(tmp_path: Path) -> None:
    root = tree(tmp_path / "notes", {"2026-02-30.md": "## Notes\n- a note\n",
                                     "2026-03-02.md": "## Notes\n- another note\n"})
    db = str(tmp_path / "db")
    shown = CliRunner().invoke(cli, ["--db", db, "--embedder", "hashing", "import",
                                     "markdown", str(root)])
    assert shown.exit_code == 0, shown.output
    assert "created 1," in shown.stdout
    assert shown.stderr == ("warning: workspace/memory/2026-02-30.md: not imported, its name "
                            "is no date\n")
    data = CliRunner().invoke(cli, ["--db", db, "--embedder", "hashing", "--json",
                                    "import", "markdown", str(root)])
    assert data.exit_code == 0, data.output
    assert json.loads(data.stdout)["skipped"] == [
        "workspace/memory/2026-02-30.md: not imported, its name is no date"]
    clean = tree(tmp_path / "clean", {"2026-03-03.md": "## Notes\n- a third note\n"})
    quiet = CliRunner().invoke(cli, ["--db", db, "--embedder", "hashing", "--json",
                                     "import", "markdown", str(clean)])
    assert "skipped" not in json.loads(quiet.stdout)


def test_files_that_begin_with_a_byte_order_mark_are_read(tmp_path: Path) -> None:
    root = tree(tmp_path / "notes", {"2026-03-01.md": BOM + "## Notes\n- the gate code is 4412\n"})
    chat = tmp_path / "chat.json"
    chat.write_text(BOM + json.dumps([{"role": "user", "content": "I live in Oslo now"}]),
                    encoding="utf-8")
    records = tmp_path / "records.json"
    records.write_text(BOM + json.dumps([record("r1", "Ana is a nurse in Porto")]),
                       encoding="utf-8")
    db = str(tmp_path / "db")
    for args in (["import", "markdown", str(root)],
                 ["import", "conversation", str(chat), "--session", "s1"],
                 ["import", "ump", str(records)]):
        done = CliRunner().invoke(cli, ["--db", db, "--embedder", "hashing", *args])
        assert done.exit_code == 0, (args, done.output)
    with MemoryStore(db, embedder="hashing") as store:
        texts = {m.text for m in store.memories()}
        assert {"the gate code is 4412", "Ana is a nurse in Porto"} <= texts
        assert any("Oslo" in t for t in texts)
        again = tmp_path / "again.json"
        again.write_text(BOM + json.dumps([record("r2", "Tom plays the cello")]),
                         encoding="utf-8")
        assert import_ump(store, again).created == ["r2"]
    chats = tmp_path / "chats.json"
    chats.write_text(BOM + json.dumps({"conversations": []}), encoding="utf-8")
    assert load_chats(chats) == []


def test_a_message_without_text_says_so_and_names_its_keys(tmp_path: Path) -> None:
    from graphmem import InvalidInputError

    with MemoryStore(str(tmp_path / "db"), embedder="hashing") as store, \
            pytest.raises(InvalidInputError) as refused:
        store.add_conversation([{"role": "user", "message": "I live in Oslo"}],
                               session_id="s1")
    assert str(refused.value).startswith("message 0 has no text (give it as 'text' or "
                                         "'content'; its keys are role, message)")
    # a null text beside a content: the content is the text
    with MemoryStore(str(tmp_path / "db"), embedder="hashing") as store:
        said = store.add_conversation([{"text": None, "content": "I live in Oslo"}],
                                      session_id="s0")
        assert [store.get(i).text for i in said.created_ids] == ["I live in Oslo"]

    # a wrong text says which key, what type, and which of the two limits it broke
    for message, field, said in (
            ({"content": 42}, "messages[0].content", "message 0: content must be a string, "
                                                     "not int"),
            # counted from 1, as check_unicode counts
            ({"text": "I live in\x00 Oslo"}, "messages[0].text",
             "message 0: text has a NUL character (at character 10)"),
            # the field that is wrong is named, not "role" for every one
            ({"text": "hi", "speaker": 5}, "messages[0].speaker",
             "message 0: speaker must be a string, not int"),
            ({"text": "hi", "name": ["Ana"]}, "messages[0].name",
             "message 0: name must be a string, not list"),
            ({"text": "hi", "role": 1}, "messages[0].role",
             "message 0: role must be a string, not int"),
            # two texts, one kept in silence, before
            ({"text": "I live in Rome.", "content": "I live in Oslo."}, "messages[0].content",
             "message 0 has both a text and a content, which differ: give one"),
            ({"content": "x" * 200_001}, "messages[0].content",
             "message 0: content is 200,001 characters long; the limit is 200,000")):
        with MemoryStore(str(tmp_path / "db"), embedder="hashing") as store, \
                pytest.raises(InvalidInputError) as refused:
            store.add_conversation([message], session_id="s1")
        assert (str(refused.value), refused.value.field) == (said, field)


def test_a_message_role_is_read_by_the_names_chat_formats_use(tmp_path: Path) -> None:
    from graphmem import InvalidInputError

    with MemoryStore(str(tmp_path / "db"), embedder="hashing") as store:
        # Gemini's "model" is the assistant: what it says is not the user's
        store.add_conversation([
            {"role": "human", "content": "I just moved to Porto for the new job"},
            {"role": "model", "content": "Your dentist appointment is on Friday at 9am."},
            {"role": "developer", "content": "The user lives in Lisbon."},
        ], session_id="s1", owner="ana")
        said = {m.text: m for m in store.memories(owner="ana")}
        assert "I just moved to Porto for the new job" in said
        assert all("Lisbon" not in t for t in said)
        assert all(m.provenance.get("role") == "assistant"
                   for t, m in said.items() if "dentist" in t)
        before = store.stats()
        with pytest.raises(InvalidInputError) as refused:
            store.add_conversation([{"role": "user", "content": "I love rowing"},
                                    {"role": "wizard", "content": "I live in Graz"}],
                                   session_id="s2", owner="ana")
        assert refused.value.field == "messages[1].role"
        assert "'wizard' is not one of user, assistant" in str(refused.value)
        assert store.stats() == before


def test_importing_a_sitting_again_does_not_bring_back_what_was_corrected(
        tmp_path: Path) -> None:
    first = [{"role": "user", "content": "My sister Amara is visiting from Accra on "
                                         "December 12th."},
             {"role": "user", "content": "She's allergic to peanuts."}]
    with MemoryStore(str(tmp_path / "db"), embedder="hashing") as store:
        store.add_conversation(first, session_id="s1", owner="kai")
        store.add_conversation(["Sorry, wrong date: Amara arrives on December 14th, not "
                                "the 12th."], session_id="s2", owner="kai")
        current = sorted(m.text for m in store.memories(owner="kai") if not m.superseded_by)
        again = store.add_conversation(first, session_id="s1", owner="kai")
        assert again.created_ids == [] and again.candidate_ids == []
        assert sorted(m.text for m in store.memories(owner="kai")
                      if not m.superseded_by) == current
        # said anew in another sitting, it is a statement of its own
        anew = store.add_conversation(["My sister Amara is visiting from Accra on "
                                       "December 12th."], session_id="s3", owner="kai")
        assert len(anew.created_ids) == 1
