"""Writers at once on one store: threads writing the same memories, a conversation planned
while a memory it corrects is forgotten, and a write transaction rolled back (Kuzu 0.11.3
left the rows such a transaction had updated unwritable, or crashed the next write of
them). The first two run in a child process: what failed here was a segfault."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import threading
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from graphmem import MemoryStore, Status
from graphmem.algorithms import engine_of


def _child(script: str, db: Path | str, *args: str) -> dict[str, Any]:
    """Run ``script`` (``DB``: the store's path, then ``args``) in a fresh process; its
    last line is JSON."""
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(script), str(db), *args],
                          capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, (done.returncode, done.stderr[-3000:])
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def _at_once(work: Any, threads: int) -> None:
    """``work(n)`` in ``threads`` threads at once, each waited for."""
    running = [threading.Thread(target=work, args=(n,)) for n in range(threads)]
    for thread in running:
        thread.start()
    for thread in running:
        thread.join()


@pytest.mark.parametrize("in_memory", [False, True])
def test_a_rolled_back_write_leaves_its_rows_writable(tmp_path: Path, in_memory: bool) -> None:
    result = _child("""
        import json, sys
        from graphmem import MemoryStore
        from graphmem.algorithms import engine_of

        class Boom(Exception):
            pass

        with MemoryStore(sys.argv[1], embedder="hashing") as store:
            ids = [m.id for m in store.add_many([f"note {i} about tea" for i in range(4)])]
            db = engine_of(store).db
            refused, written = 0, []
            for k in range(40):
                memory_id = ids[k % 4]
                try:
                    with db.write() as tx:  # a write that fails after it set a field
                        tx.run("MATCH (m:Memory {id: $id}) SET m.importance = 0.99",
                               {"id": memory_id})
                        raise Boom
                except Boom:
                    refused += 1
                value = round(0.01 * (k + 1), 2)
                store.update(memory_id, importance=value)
                written.append(store.get(memory_id).importance == value)
            print(json.dumps({"refused": refused, "written": written,
                              "last": [store.get(i).importance for i in ids],
                              "found": [h.memory.id for h in store.recall("note 2 tea")][:1]
                              == [ids[2]], "history": len(store.history(ids[0]))}))
    """, ":memory:" if in_memory else tmp_path / "db")
    assert result["refused"] == 40
    assert all(result["written"]), result["written"]
    assert result["last"] == [0.37, 0.38, 0.39, 0.4]
    assert result["found"] and result["history"] == 11  # created, ten updates


def test_an_in_memory_store_that_cannot_heal_refuses_writes_and_keeps_reads(
        tmp_path: Path, monkeypatch: Any) -> None:
    """Should the copy after a rolled-back write fail (no writable temporary directory),
    writing on could crash the process (Kuzu 0.11.3): writes are refused, saying why."""
    import tempfile as tempfile_module

    from graphmem import StoreError

    class Boom(Exception):
        pass

    def unwritable(*args: Any, **kwargs: Any) -> Any:
        raise OSError(30, "Read-only file system", "/tmp")

    with MemoryStore(embedder="hashing") as store:
        kept = store.add("Lena drinks green tea at noon")
        db = engine_of(store).db
        monkeypatch.setattr(tempfile_module, "TemporaryDirectory", unwritable)
        with pytest.raises(Boom), db.write() as tx:
            tx.run("MATCH (m:Memory {id: $id}) SET m.importance = 0.99", {"id": kept.id})
            raise Boom
        for write in (lambda: store.update(kept.id, importance=0.2),
                      lambda: store.add("another note"),
                      lambda: store.forget(kept.id, confirm=True)):
            with pytest.raises(StoreError, match=r"takes no more writes.*Read-only file"):
                write()
        assert store.get(kept.id).importance == kept.importance  # nothing half-written
        assert [h.memory.id for h in store.recall("green tea", k=1)] == [kept.id]
        monkeypatch.undo()
        store.backup(tmp_path / "saved")  # what it holds can be taken out
    MemoryStore.restore_backup(tmp_path / "saved", tmp_path / "copy")
    with MemoryStore(tmp_path / "copy", embedder="hashing") as copy:
        assert copy.get(kept.id).text == kept.text


@pytest.mark.parametrize("recalled", [False, True])
def test_threads_writing_one_memory_each_build_on_the_others(tmp_path: Path,
                                                             recalled: bool) -> None:
    """``recalled``: the recall index is loaded and the threads record recalls between
    writes, so each write starts from the row the store holds, not from a read."""
    result = _child("""
        import json, random, sys, threading
        from graphmem import MemoryStore

        recalled = sys.argv[2] == "True"
        with MemoryStore(sys.argv[1], embedder="hashing") as store:
            ids = [m.id for m in store.add_many([f"Lena's note {i}" for i in range(3)])]
            if recalled:
                store.recall("Lena's note", k=3)
            errors, done = [], []

            def work(seed):
                rng = random.Random(seed)
                for _ in range(25):
                    memory_id = rng.choice(ids)
                    try:
                        if rng.random() < 0.5:
                            store.update(memory_id, importance=rng.uniform(0.1, 0.9))
                            done.append("update")
                        else:
                            useful = rng.random() < 0.5
                            store.feedback(memory_id, useful=useful)
                            done.append("useful" if useful else "feedback")
                        if recalled:
                            store.recall("Lena's note", k=3, record_access=True)
                    except Exception as exc:
                        errors.append(repr(exc))

            threads = [threading.Thread(target=work, args=(n,)) for n in range(4)]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
            result = {
                "errors": errors, "done": len(done), "useful": done.count("useful"),
                "asked": done.count("feedback") + done.count("useful"),
                "versions": [store.get(i).version for i in ids],
                "history": [len(store.history(i)) for i in ids],
                "feedback": sum(len(store.events(i, event_type="feedback")) for i in ids),
                "counted": sum(store.get(i).useful_count + store.get(i).ignored_count
                               for i in ids),
                "accessed": sum(store.get(i).access_count for i in ids)}
        with MemoryStore(sys.argv[1], embedder="hashing") as store:
            result["stored"] = sum(store.get(i).access_count for i in ids)
        print(json.dumps(result))
    """, tmp_path / "db", str(recalled))
    assert result["errors"] == []
    assert result["done"] == 100
    # every version each writer wrote is in the history, none lost or doubled
    assert result["versions"] == result["history"]
    assert result["feedback"] == result["asked"] > 0
    assert result["counted"] == result["asked"]  # no count built on an old row
    # an access for each useful feedback and each of the three hits of each recall, none
    # lost between a recall counting and a feedback counting the same memory
    accesses = result["useful"] + (3 * result["done"] if recalled else 0)
    assert result["accessed"] == result["stored"] == accesses


def test_a_conversation_planned_before_a_forget_is_planned_again(tmp_path: Path) -> None:
    said = [{"role": "user", "content": "My dentist appointment is on Tuesday at 3pm."}]
    again = [{"role": "user", "content": "Sorry, the dentist appointment is on Thursday at "
                                         "3pm now, not Tuesday."}]
    # without a forget, the second sitting corrects the first
    with MemoryStore(tmp_path / "twin", embedder="hashing") as twin:
        first = twin.add_conversation(said, session_id="s1", owner="ana").created_ids
        assert twin.add_conversation(again, session_id="s2", owner="ana").corrected_ids == first
    with MemoryStore(tmp_path / "db", embedder="hashing") as store:
        (stated,) = store.add_conversation(said, session_id="s1", owner="ana").created_ids
        plan = store._memories.plan_merge
        forgot: list[BaseException | None] = []

        def forget_meanwhile(*args: Any, **kwargs: Any) -> Any:
            if not forgot:  # the conversation chose what it corrects; the user forgets it
                thread = threading.Thread(target=lambda: forgot.append(
                    store.forget(stated, confirm=True, purge=False)))
                thread.start()
                thread.join()
            return plan(*args, **kwargs)

        store._memories.plan_merge = forget_meanwhile  # type: ignore[method-assign]
        result = store.add_conversation(again, session_id="s2", owner="ana")
        store._memories.plan_merge = plan  # type: ignore[method-assign]
        assert forgot == [None]
        assert result.corrected_ids == [] and len(result.created_ids) == 1
        gone = store.get(stated)
        assert gone.status is Status.FORGOTTEN and gone.text == ""
        assert store.links(stated) == []
        assert len(store.history(stated)) == 2  # created, forgotten: nothing after
        engine = engine_of(store)
        assert not [f for f in engine.facts(all_owners=True) if stated in f.sources]


def test_clients_writing_one_memory_through_the_sidecar_at_once(tmp_path: Path) -> None:
    import random

    import httpx

    from ._servers import running_sidecar

    with MemoryStore(tmp_path / "db", embedder="hashing") as store, \
            running_sidecar(store) as base:
        ids = [m.id for m in store.add_many([f"Lena's note {i} about tea" for i in range(3)])]
        answers: list[int | str] = []

        def client(seed: int) -> None:
            rng = random.Random(seed)
            with httpx.Client(base_url=base, timeout=60) as http:
                for _ in range(30):
                    memory_id = rng.choice(ids)
                    try:
                        if rng.random() < 0.5:
                            answer = http.patch(f"/v1/memories/{memory_id}", json={
                                "importance": round(rng.uniform(0.1, 0.9), 3)})
                        else:
                            answer = http.post("/v1/feedback", json={
                                "memory_id": memory_id, "useful": rng.random() < 0.5})
                        answers.append(answer.status_code)
                    except httpx.HTTPError as exc:
                        answers.append(type(exc).__name__)

        _at_once(client, 8)
        assert answers == [200] * 240
        assert [store.get(i).version for i in ids] == [len(store.history(i)) for i in ids]


def test_a_conversation_planned_while_the_model_changes_is_planned_again(
        tmp_path: Path) -> None:
    with MemoryStore(tmp_path / "db", embedder="hashing") as store:
        store.add("my sister Ana is a nurse at the hospital in Porto", owner="tess")
        ctx = store._ctx
        embed = ctx.embed
        switched: list[int] = []

        def switch_meanwhile(texts: Any) -> Any:
            vectors = embed(texts)  # the old model's
            if not switched:  # another thread re-embeds the store with another model
                switched.append(store.reembed("hashing:128"))
            return vectors

        ctx.embed = switch_meanwhile  # type: ignore[method-assign]
        result = store.add_conversation(["I moved to Lisbon in March",
                                         "Ana visits every second weekend"],
                                        session_id="s1", owner="tess")
        ctx.embed = embed  # type: ignore[method-assign]
        assert switched == [1] and len(result.created_ids) == 2
    with MemoryStore(tmp_path / "db") as store:
        assert store.embedder.dim == 128
        (hit,) = store.recall("Lisbon in March", owner="tess", k=1)
        assert hit.memory.text == "I moved to Lisbon in March"


def test_two_threads_merging_one_record_both_succeed(tmp_path: Path) -> None:
    from graphmem import MemoryInput

    with MemoryStore(tmp_path / "db", embedder="hashing") as store:
        errors: list[str] = []

        def merge(thread: int) -> None:
            for n in range(10):
                try:
                    store.merge([MemoryInput(id="ext-1", text=f"Lena's note, take {thread}.{n}")])
                except Exception as exc:
                    errors.append(repr(exc))

        _at_once(merge, 2)
        assert errors == []
        assert store.get("ext-1").version == len(store.history("ext-1"))


def test_a_lifecycle_planned_before_a_forget_leaves_the_forgotten_memory(
        tmp_path: Path, monkeypatch: Any) -> None:
    from datetime import UTC, datetime, timedelta

    from graphmem._store._lifecycle import Lifecycle

    days = [0.0]
    start = datetime(2026, 1, 1, tzinfo=UTC)
    with MemoryStore(tmp_path / "db", embedder="hashing",
                     clock=lambda: start + timedelta(days=days[0])) as store:
        victim = store.add_many([f"note {i}: Lena drinks tea at {i} pm" for i in range(5)])[2]
        days[0] = 30  # a month later: decay has work for every memory
        plan = Lifecycle.plan

        def forget_after_planning(self: Lifecycle, *args: Any) -> Any:
            planned = plan(self, *args)
            assert any(d.memory_id == victim.id for d in planned.decisions["decay"])
            store.forget(victim.id, confirm=True)  # another thread, as the plan is made
            return planned

        monkeypatch.setattr(Lifecycle, "plan", forget_after_planning)
        report = store.run_lifecycle(apply=True)
        assert report.jobs.decayed == 4  # planned for all five; what was written
        assert [v.change_type.value for v in store.history(victim.id)] == [
            "created", "forgotten"]
        others = [m for m in store.memories() if m.id != victim.id]
        assert all(store.history(m.id)[-1].change_type.value == "importance_decay"
                   for m in others)


def test_a_flush_waits_for_the_accesses_before_it_not_for_a_busy_recall_loop() -> None:
    import time
    from datetime import UTC, datetime

    from graphmem._store._access import AccessWriter

    written: list[set[str]] = []

    def write(rows: Any) -> None:
        time.sleep(0.02)
        written.append(set(rows))

    writer = AccessWriter(write, window=0.01)
    stop = threading.Event()

    def recall_loop() -> None:  # a recall recording accesses, again and again
        n = 0
        while not stop.is_set():
            writer.submit({f"m{n}": (1, datetime.now(UTC), ())})
            n += 1
            time.sleep(0.001)

    writer.submit({"mine": (1, datetime.now(UTC), ())})
    loop = threading.Thread(target=recall_loop)
    loop.start()
    try:
        started = time.monotonic()
        writer.flush(timeout=8.0)
        waited = time.monotonic() - started
    finally:
        stop.set()
        loop.join()
        writer.close()
    assert any("mine" in batch for batch in written)
    assert waited < 2.0, waited  # waiting for no access pending took the whole timeout


def test_a_memory_added_while_reembed_runs_gets_the_new_model(
        tmp_path: Path, monkeypatch: Any) -> None:
    from graphmem._store import _memories

    with MemoryStore(tmp_path / "db", embedder="hashing") as store:
        store.add_many([f"note {i}: Lena drinks tea at {i} pm" for i in range(6)])
        embedded = _memories._embedded
        late: list[str] = []

        def add_meanwhile(*args: Any) -> Any:
            if not late:  # another thread adds a memory with the old model, and edits one
                late.append(store.add("Ana moved to Porto in May").id)
                first = store.memories()[0]
                store.update(first.id, text=first.text + " (with lemon)")
            return embedded(*args)

        monkeypatch.setattr(_memories, "_embedded", add_meanwhile)
        assert store.reembed("hashing:128", batch_size=4) == 7
        monkeypatch.setattr(_memories, "_embedded", embedded)
        for memory in store.memories():  # each vector the new model's (old: 384 values)
            stored = engine_of(store).scan(["id", "vector"], ids=[memory.id]).vectors
            assert stored is not None
            fresh = store._ctx.embed_memories([memory.text], [memory.context])
            assert stored.shape == (1, 128)
            assert float(np.abs(stored - fresh).max()) < 1e-3, memory.text
    with MemoryStore(tmp_path / "db") as store:
        assert store.recall("Porto", k=1)[0].memory.id == late[0]


def test_a_forget_while_reembed_runs_leaves_its_neighbours_with_the_new_model(
        tmp_path: Path, monkeypatch: Any) -> None:
    from graphmem._store import _memories

    turns = ["My sister Ana is a nurse in Porto", "I work at a bakery on Rua Augusta",
             "she's 34, older than me", "My cat Miso is twelve", "he's grey and shy"]
    with MemoryStore(tmp_path / "db", embedder="hashing") as store:
        ids = store.add_conversation(turns, owner="lena", session_id="s1").created_ids
        made = [store.get(i) for i in ids]
        assert len(made) == 5 and any("bakery" in (m.context or "") for m in made)
        embedded = _memories._embedded
        gone: list[str] = []

        def forget_meanwhile(*args: Any) -> Any:
            if not gone:  # another thread forgets a turn: its words leave the neighbours
                gone.append(made[1].id)
                store.forget(made[1].id, confirm=True)
            return embedded(*args)

        monkeypatch.setattr(_memories, "_embedded", forget_meanwhile)
        store.reembed("hashing:128", batch_size=2)
        monkeypatch.setattr(_memories, "_embedded", embedded)
        left = [m for m in store.memories(owner="lena") if m.id not in gone]
        assert left and all("bakery" not in (m.context or "") for m in left)
        for memory in left:
            stored = engine_of(store).scan(["id", "vector"], ids=[memory.id]).vectors
            assert stored is not None
            fresh = store._ctx.embed_memories([memory.text], [memory.context])
            assert float(np.abs(stored - fresh).max()) < 1e-3, memory.text


def test_a_memory_forgotten_while_reembed_embeds_it_keeps_no_vector(
        tmp_path: Path, monkeypatch: Any) -> None:
    from graphmem._store import _memories

    with MemoryStore(tmp_path / "db", embedder="hashing") as store:
        made = store.add_many([f"note {i}: Lena's PIN is {1000 + i}" for i in range(4)])
        victim = made[1]
        embedded = _memories._embedded
        forgotten: list[str] = []

        def forget_inside_the_batch(chosen: Any, rows: Any) -> Any:
            if not forgotten and any(r["id"] == victim.id for r in rows):
                forgotten.append(victim.id)  # after the scan read its text
                store.forget(victim.id, confirm=True)
            return embedded(chosen, rows)

        monkeypatch.setattr(_memories, "_embedded", forget_inside_the_batch)
        store.reembed("hashing:128", batch_size=2)
        assert forgotten == [victim.id]
        scan = engine_of(store).scan(["id", "vector"], ids=[victim.id])
        assert scan.vectors is None or not np.abs(scan.vectors).any()
    with MemoryStore(tmp_path / "db") as store:  # nor in the vector log read at open
        scan = engine_of(store).scan(["id", "vector"], ids=[victim.id])
        assert scan.vectors is None or not np.abs(scan.vectors).any()
        assert victim.id not in [h.memory.id for h in store.recall("Lena's PIN", k=4)]


def test_a_closed_store_says_so_to_every_caller_and_to_a_recall_running_beside_close(
        tmp_path: Path) -> None:
    from graphmem import StoreError

    store = MemoryStore(tmp_path / "db", embedder="hashing")
    kept = store.add_many([f"note {i}: tea by the sea on day {i % 7}" for i in range(300)])[0]
    errors: list[BaseException] = []
    recalls = [0]
    started = threading.Event()

    def recall_loop() -> None:
        while True:
            try:
                store.recall("tea by the sea", k=5)
            except BaseException as exc:  # what a caller beside close() is told
                errors.append(exc)
                return
            recalls[0] += 1
            started.set()

    thread = threading.Thread(target=recall_loop)
    thread.start()
    assert started.wait(60)
    store.close()
    thread.join(60)
    assert recalls[0] > 0
    assert len(errors) == 1 and type(errors[0]) is StoreError, errors
    assert str(errors[0]) == "the store is closed"
    calls = [lambda: store.recall("tea"), lambda: store.get(kept.id), lambda: store.add("x"),
             lambda: store.update(kept.id, importance=0.2), lambda: store.memories(),
             lambda: store.forget(kept.id, confirm=True), lambda: store.entities(),
             lambda: store.run_lifecycle(apply=True)]
    for call in calls:
        with pytest.raises(StoreError, match=r"^the store is closed$"):
            call()
    with MemoryStore(tmp_path / "db", embedder="hashing") as again:
        assert again.get(kept.id).text == kept.text  # nothing half-written


def test_a_lifecycle_leaves_a_memory_another_handle_forgot_as_it_planned(
        pg_url: str, monkeypatch: Any) -> None:
    """Two handles on one PostgreSQL store (two processes, as a fleet runs them): a
    forget through the other lands between the plan and its writes. The job statements
    touch only memories still in the state the plan saw."""
    from datetime import UTC, datetime, timedelta

    from graphmem._store._lifecycle import Lifecycle

    days = [0.0]
    start = datetime(2026, 1, 1, tzinfo=UTC)

    def clock() -> datetime:
        return start + timedelta(days=days[0])

    with MemoryStore(pg_url, embedder="hashing", clock=clock) as mine, \
            MemoryStore(pg_url, embedder="hashing", clock=clock) as other:
        victim = mine.add_many([f"note {i}: Lena drinks tea at {i} pm" for i in range(5)])[2]
        days[0] = 30  # decay has work for every memory
        plan = Lifecycle.plan

        def forget_elsewhere(self: Lifecycle, *args: Any) -> Any:
            planned = plan(self, *args)
            other.forget(victim.id, confirm=True)
            return planned

        monkeypatch.setattr(Lifecycle, "plan", forget_elsewhere)
        report = mine.run_lifecycle(apply=True)
        assert report.jobs.decayed == 4  # what was written, though this handle saw no forget
        assert [v.change_type.value for v in mine.history(victim.id)] == [
            "created", "forgotten"]
        assert mine.get(victim.id).status is Status.FORGOTTEN
        others = [m for m in mine.memories() if m.id != victim.id]
        assert len(others) == 4 and all(
            mine.history(m.id)[-1].change_type.value == "importance_decay" for m in others)
