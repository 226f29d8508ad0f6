"""Deletion is complete (property-based): after ``forget``, no trace of a forgotten
memory's text is reachable through recall (every preset, with explanations), named
queries, ad-hoc Cypher, the exports, the version history, the recall cache, or the bytes
of the database files; the knowledge graph keeps no name, alias or merge only a forgotten
memory gave, and no fact whose validity a forgotten one set or ended; and the store's
keys appear in no query, export or backup."""

from __future__ import annotations

import base64
import json
import os
import shutil
import tempfile
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from graphmem import PRESETS, MemoryStore, Status
from graphmem._records import sentences_matrix
from ingest.ump import ump_records
from queries.library import load_queries, run_named

EXAMPLES = max(4, int(os.environ.get("GRAPHMEM_HOSTILE_EXAMPLES", "40")) // 5)
NOW = datetime(2026, 7, 15, 12, 0, tzinfo=UTC)
WORDS = ["amber", "basalt", "cobalt", "dune", "ember", "fjord", "garnet", "heron"]
#: Surnames found nowhere else: each secret memory names "Melanie <surname>", whom the
#: resolver joins to the Melanie of a memory that stays (a name and an alias to forget).
SURNAMES = ["Zarquon", "Velmira", "Tolvane", "Brisquel", "Yandrik", "Fenwright", "Olvessa",
            "Druvane", "Maelith"]
CITIES = ["Lisbon", "Quito", "Lagos", "Porto"]


def secret(i: int) -> str:
    """A token found nowhere else (so any byte of it found later is a leak)."""
    return f"xq{i:02d}vault{WORDS[i % len(WORDS)]}zz"


scenario = st.fixed_dictionaries({
    "n": st.integers(4, 9),
    "links": st.lists(st.tuples(st.integers(0, 8), st.integers(0, 8)), max_size=10),
    "updates": st.lists(st.integers(0, 8), max_size=4),
    "recalls": st.lists(st.integers(0, 8), max_size=4),
    "feedback": st.lists(st.tuples(st.integers(0, 8), st.booleans()), max_size=3),
    "archive": st.lists(st.integers(0, 8), max_size=2),
    "supersede": st.lists(st.integers(0, 8), max_size=2),
    "conversation": st.booleans(),
    "lifecycle": st.booleans(),
    "forget": st.lists(st.integers(0, 8), min_size=1, max_size=3, unique=True),
})


def _build(store: MemoryStore, plan: dict[str, Any]) -> tuple[dict[str, str], dict[str, list[str]]]:
    """Run the scenario; the ids by secret, and every text each memory ever had."""
    ids: dict[str, str] = {}
    texts: dict[str, list[str]] = {}
    store.add("Melanie lives in Porto.")  # stays: the entity and fact the others touch
    for i in range(plan["n"]):
        word = secret(i)
        # the year the move happened is the memory's too: a fact's validity may not keep it
        memory = store.add(f"The code for locker {i} is {word}. Melanie {SURNAMES[i]} moved "
                           f"to {CITIES[i % len(CITIES)]} in {1900 + i}.",
                           subject=f"locker {word}", tags=[word],
                           payload=json.dumps({"raw": word}), importance=0.3 + i / 20)
        ids[word] = memory.id
        texts[memory.id] = [word, SURNAMES[i].lower(), f"year:{1900 + i}"]
        VECTORS.setdefault(memory.id, []).extend(_sentence_bytes(store, memory.id))
    order = list(ids.values())

    def pick(i: int) -> str:
        return order[i % len(order)]

    for a, b in plan["links"]:
        if pick(a) != pick(b):
            store.link(pick(a), pick(b), kind="references")
    for i in plan["updates"]:
        word = f"{secret(i % len(order))}upd"
        store.update(pick(i), text=f"Locker {i} now uses {word}")
        texts[pick(i)].append(word)
    for i in plan["recalls"]:
        store.recall(f"locker {i} code", k=3)
    store.flush()
    for i, useful in plan["feedback"]:
        store.feedback(pick(i), useful=useful)
    for i in plan["archive"]:
        if store.get(pick(i)).status is Status.ACTIVE:
            store.archive(pick(i), reason="manual", create_summary=True)
    for i in plan["supersede"]:
        if store.get(pick(i)).status is Status.ACTIVE:
            # (a new memory inherits subject and tags unless given: these are its own)
            store.supersede(pick(i), f"Locker {i} was emptied", reason="conflict_update",
                            subject=f"locker {i}", tags=["emptied"])
    if plan["conversation"]:
        # the conversation's messages mention two secrets, so other memories' context does
        words = [secret(0), secret(1)]
        result = store.add_conversation(
            [f"I moved the code {words[0]} to the blue notebook yesterday.",
             f"My sister keeps the spare code {words[1]} in her office safe.",
             "We agreed to change both codes before the trip to Lisbon next month."],
            session_id="s1")
        for memory_id in [*result.created_ids, *result.candidate_ids]:
            text = store.get(memory_id).text
            texts[memory_id] = [w for w in words if w in text] or [text]
    if plan["lifecycle"]:
        store.run_lifecycle(apply=True)
    return ids, texts


#: memory id -> the bytes of every sentence vector it was given (float32, and as stored)
VECTORS: dict[str, list[bytes]] = {}


def _sentence_bytes(store: MemoryStore, memory_id: str) -> list[bytes]:
    """A memory's sentence vectors as bytes a file could hold: each row's float32 bytes,
    their base64 (rows of 384 floats encode apart), and the stored text."""
    text = store._ctx.engine.scan(["sentences"], ids=[memory_id]).table.column(
        "sentences")[0].as_py()
    if not text:
        return []
    rows = sentences_matrix(text, store._ctx.vector_dim())
    assert rows is not None
    raw = [row.tobytes() for row in rows]
    return [*raw, *(base64.b64encode(r) for r in raw), text.encode()]


def _value(name: str, kind: str, memory_id: str, word: str) -> Any:
    if kind == "TIMESTAMP":
        return NOW
    if name.endswith("id"):
        return memory_id
    return {"STRING": word, "INT64": 10, "DOUBLE": 0.5, "BOOLEAN": True}.get(kind, word)


def _leaks(store: MemoryStore, words: list[str], forgotten: set[str]) -> list[str]:
    found: list[str] = []
    years = {int(w.removeprefix("year:")) for w in words if w.startswith("year:")}
    words = [w for w in words if not w.startswith("year:")]

    def look(where: str, blob: str) -> None:
        found.extend(f"{where}: {w}" for w in words if w in blob.lower())

    for preset in PRESETS:
        for word in words:
            hits = store.recall(f"Where did Melanie {word} go?", k=20, preset=preset)
            look(f"recall {preset}", json.dumps([[h.memory.model_dump(mode="json"),
                                                  h.explanation.model_dump(mode="json")]
                                                 for h in hits]))
            found.extend(f"recall {preset} returned {h.memory.id}" for h in hits
                         if h.memory.id in forgotten)
    found += _graph_leaks(store, years, forgotten)
    for name, query in load_queries().items():
        for memory_id in forgotten:
            values = {p.name: _value(p.name, p.type, memory_id, words[0])
                      for p in query.params if p.required or p.name.endswith("id")}
            look(f"query {name}", json.dumps(run_named(store, name, values), default=str))
    look("cypher", json.dumps(store.cypher("MATCH (n) RETURN n"), default=str))
    look("cypher edges", json.dumps(store.cypher("MATCH ()-[r]->() RETURN r"), default=str))
    look("export", json.dumps(store.export(), default=str))
    look("ump", json.dumps(ump_records(store), default=str))
    look("entities", json.dumps([e.__dict__ for e in store.entities()], default=str))
    keys = [v for _, v in store._ctx.engine.secrets()]
    for where, blob in (("cypher", store.cypher("MATCH (n) RETURN n")),
                        ("cypher edges", store.cypher("MATCH ()-[r]->() RETURN r")),
                        ("export", store.export()), ("ump", ump_records(store))):
        text = json.dumps(blob, default=str)
        found.extend(f"{where}: the key {k[:8]}..." for k in keys if k in text)
    for memory_id in forgotten:
        look("history", json.dumps([v.model_dump(mode="json")
                                    for v in store.history(memory_id)]))
        look("events", json.dumps([e.model_dump(mode="json") for e in store.events(memory_id)]))
    look("recall cache", repr(getattr(store, "_cache", {})))
    return found


def _graph_leaks(store: MemoryStore, years: set[int], forgotten: set[str]) -> list[str]:
    """Facts that a forgotten memory still acts in: stated by it, ended by it or by a
    fact that is gone, or valid from or until a year only it said."""
    facts = store.facts()
    live = {f.id for f in facts}
    found = []
    for fact in facts:
        if set(fact.sources) & forgotten:
            found.append(f"fact {fact.id} is stated by a forgotten memory")
        ended_by = fact.ended_by or ""
        if ended_by and ended_by not in live and (
                not ended_by.startswith("memory:") or ended_by[7:] in forgotten):
            found.append(f"fact {fact.id} is ended by {ended_by}, which is gone")
        for when in (fact.valid_from, fact.valid_to):
            if when is not None and when.year in years:
                found.append(f"fact {fact.id} holds the forgotten year {when.year}")
    for row in store.cypher("MATCH (m:Memory) WHERE m.id IN $ids RETURN m.id AS id, "
                            "m.times_from AS a, m.times_to AS b", {"ids": sorted(forgotten)}):
        if row["a"] or row["b"]:  # the times its text spoke of
            found.append(f"memory {row['id']} keeps the times {row['a']} {row['b']}")
    return found


@settings(max_examples=EXAMPLES, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow])
@given(plan=scenario)
def test_forget_leaves_no_trace(plan: dict[str, Any]) -> None:
    root = Path(tempfile.mkdtemp(prefix="graphmem-forget-"))
    clock = iter(NOW + timedelta(minutes=m) for m in range(10_000))
    try:
        with MemoryStore(root / "db", embedder="hashing", clock=lambda: next(clock)) as store:
            ids, texts = _build(store, plan)
            order = list(ids.values())
            doomed = {order[i % len(order)] for i in plan["forget"]}
            words = sorted({w for m in doomed for w in texts[m]})
            # the conversation's memories carrying a doomed secret are forgotten too
            doomed |= {m for m, ws in texts.items() if set(ws) & set(words)}
            words = sorted({w for m in doomed for w in texts[m]})
            vectors = [v for m in doomed for v in VECTORS.get(m, [])]
            assert vectors, "a secret memory has sentence vectors to forget"
            for memory_id in sorted(doomed):
                store.forget(memory_id, confirm=True, purge=False)
            assert [m for m in doomed if _sentence_bytes(store, m)] == []
            store.purge()
            assert _leaks(store, words, doomed) == []
            kept = [ws[0] for m, ws in texts.items() if m not in doomed
                    if store.get(m).status is Status.ACTIVE and not store.get(m).superseded_by]
            if kept:  # what was not forgotten is still found
                assert store.recall(kept[0], k=5, preset="fulltext")
            store.add("written after the forget")
            store.backup(root / "backup")
            keys = [v.encode() for _, v in store._ctx.engine.secrets()]
        texts_of = [w.encode() for w in words if not w.startswith("year:")]
        backup = b"".join(p.read_bytes() for p in (root / "backup").rglob("*") if p.is_file())
        assert [w for w in texts_of if w in backup.lower()] == []
        assert [k for k in keys if k in backup] == []
        assert not any(v in backup for v in vectors), "the backup holds sentence vectors"
        for file in (root / "db").iterdir():
            raw = file.read_bytes()
            data = raw.lower()
            leaked = [w for w in texts_of if w in data]
            assert not leaked, f"{file.name} holds {leaked}"
            assert not any(v in raw for v in vectors), f"{file.name} holds sentence vectors"
    finally:
        shutil.rmtree(root, ignore_errors=True)
