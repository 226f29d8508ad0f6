"""Conversations, reinforcement, Ollama extraction (against a loopback fake), corpora."""

from __future__ import annotations

import gzip
import json
import math
from pathlib import Path

import pytest

from graphmem import (
    BackendUnavailableError,
    InvalidInputError,
    MemoryStore,
    OllamaEmbedder,
    OllamaExtractor,
    RecordError,
    Settings,
    Status,
)
from graphmem._ollama import OllamaGenerator
from graphmem._store._recall import _RecallRecord
from tests.conftest import record_calls
from tests.fake_ollama import fake_ollama

STRONG = "I moved to Ibadan in March 2026 for lab work."
WEAK = "I might try oat milk sometime."


def test_add_result_created(store: MemoryStore) -> None:
    result = store.add_conversation([{"speaker": "Nadia", "text": STRONG}], session_id="s1",
                                    owner="nadia")
    assert (result.memories_created, result.pending_candidates_buffered,
            result.nothing_to_extract) == (1, 0, False)
    memory = store.get(result.created_ids[0])
    assert (memory.status, memory.kind.value, memory.owner, memory.session) == (
        Status.ACTIVE, "episodic", "nadia", "s1")
    assert memory.provenance["speaker"] == "Nadia" and "ibadan" in memory.entities
    assert memory.payload == STRONG and memory.payload_hash


def test_add_result_buffered(store: MemoryStore) -> None:
    result = store.add_conversation([WEAK], session_id="s1")
    assert (result.memories_created, result.pending_candidates_buffered,
            result.nothing_to_extract) == (0, 1, False)
    assert store.get(result.candidate_ids[0]).status is Status.CANDIDATE
    assert store.recall("oat milk") == []  # candidates are never recalled


def test_add_result_nothing_to_extract(store: MemoryStore) -> None:
    result = store.add_conversation(
        ["Hi!", {"role": "assistant", "text": "Hello, how can I help you today?"},
         "thanks, bye", "Which deploy command should orchard use now?"], session_id="s1")
    assert (result.memories_created, result.pending_candidates_buffered,
            result.nothing_to_extract) == (0, 0, True)
    reasons = dict(result.dropped)
    assert reasons == {0: "greeting or filler", 1: "assistant message",
                       2: "greeting or filler", 3: "nothing informative"}
    assert store.stats().memories == 0


def test_duplicates_and_session_edges(store: MemoryStore) -> None:
    first = store.add_conversation(
        [STRONG, "My sister Ada is getting married in Lagos in June 2026."], session_id="s1")
    assert first.memories_created == 2
    [link] = [x for x in store.links(first.created_ids[0]) if x.kind == "co_occurs"]
    assert (link.other, link.weight) == (first.created_ids[1], 1.0)
    again = store.add_conversation([STRONG], session_id="s2")
    assert again.nothing_to_extract and again.dropped[0][1].startswith("duplicate of ")


def test_weak_candidate_reinforced_in_a_later_session(store: MemoryStore) -> None:
    weak = store.add_conversation([WEAK], session_id="s1", owner="nadia")
    same_session = store.add_conversation([WEAK + " Maybe."], session_id="s1", owner="nadia")
    assert same_session.reinforced_ids == []  # the same session does not reinforce ...
    assert same_session.dropped[0][1].startswith("duplicate of ")  # ... it repeats
    later = store.add_conversation([WEAK], session_id="s2", owner="nadia")
    candidate = weak.candidate_ids[0]
    assert later.reinforced_ids == [candidate]
    # the same words again: the candidate itself becomes active, no second node
    assert later.memories_created == 0 and later.dropped == [(0, f"reinforces {candidate}")]
    memory = store.get(candidate)
    assert memory.status is Status.ACTIVE and not memory.superseded_by
    assert [v.change_type.value for v in store.history(candidate)] == ["created", "reinforced"]
    assert store.links(candidate) == []
    assert store.stats().memories == 1
    assert [h.memory.id for h in store.recall("oat milk")] == [candidate]


def test_a_candidate_confirmed_in_other_words_is_replaced_by_one_edge(store: MemoryStore
                                                                       ) -> None:
    weak = store.add_conversation([WEAK], session_id="s1", owner="tom")
    # similar (cosine 0.84 with the hashing embedder), not the same words
    later = store.add_conversation(["I might try oat milk sometime soon, I think."],
                                   session_id="s2", owner="tom")
    candidate = weak.candidate_ids[0]
    assert later.reinforced_ids == [candidate]
    [new] = later.created_ids
    assert store.get(new).status is Status.ACTIVE
    assert store.get(candidate).superseded_by == (new,)
    assert [(x.kind, x.other) for x in store.links(new)] == [("supersedes", candidate)]
    assert store.history(candidate)[-1].change_type.value == "reinforced"
    assert [h.memory.id for h in store.recall("oat milk")] == [new]


def test_useful_feedback_confirms_a_candidate(store: MemoryStore) -> None:
    weak = store.add_conversation([WEAK], session_id="s1")
    memory = store.feedback(weak.candidate_ids[0], useful=True)
    assert memory.status is Status.ACTIVE
    assert store.events(memory.id)[-1].event_type.value == "activate"


def test_correct_supersedes(store: MemoryStore) -> None:
    result = store.add_conversation([STRONG], session_id="s1")
    fixed = store.correct(result.created_ids[0], "I moved to Abeokuta in March 2026.")
    old = store.get(result.created_ids[0])
    assert old.superseded_by == (fixed.id,)
    assert store.events(old.id)[-1].reason == "conflict_update"
    assert store.history(old.id)[-1].change_type.value == "conflict_update"


def test_bad_messages_are_refused(store: MemoryStore) -> None:
    with pytest.raises(InvalidInputError, match="session_id"):
        store.add_conversation([STRONG], session_id="")
    with pytest.raises(InvalidInputError, match=r"message 1: text"):
        store.add_conversation([STRONG, {"speaker": "x", "text": 5}], session_id="s")
    with pytest.raises(InvalidInputError, match="timestamp"):
        store.add_conversation([{"text": STRONG, "timestamp": "soon"}], session_id="s")
    with pytest.raises(InvalidInputError, match="list of messages"):
        store.add_conversation(STRONG, session_id="s")  # type: ignore[arg-type]
    assert store.stats().memories == 0


def test_ollama_extractor_good_json(store: MemoryStore) -> None:
    answer = {"memories": [{"text": "Nadia moved to Ibadan in March 2026", "strength": 0.9,
                            "entities": ["Nadia", "Ibadan"]},
                           {"text": "Nadia may like oat milk", "strength": 0.4,
                            "entities": []}]}
    with fake_ollama([json.dumps(answer)]) as fake:
        extractor = OllamaExtractor(OllamaGenerator(fake.url, "fake"))
        result = store.add_conversation([{"speaker": "Nadia", "text": STRONG + " " + WEAK}],
                                        session_id="s1", extractor=extractor)
        path, body = fake.requests[0]
    assert (path, body["format"], body["model"]) == ("/api/generate", "json", "fake")
    assert "Speaker: Nadia" in body["prompt"]
    assert (result.memories_created, result.pending_candidates_buffered) == (1, 1)
    assert result.extractor == "ollama" and result.warnings == []
    texts = {m.text for m in store.memories()}
    assert texts == {"Nadia moved to Ibadan in March 2026", "Nadia may like oat milk"}


def test_ollama_extractor_malformed_answer_falls_back(store: MemoryStore) -> None:
    with fake_ollama(["not json at all", '{"memories": [{"strength": 2}]}']) as fake:
        extractor = OllamaExtractor(OllamaGenerator(fake.url, "fake"))
        result = store.add_conversation([STRONG], session_id="s1", extractor=extractor)
        assert len([r for r in fake.requests if r[0] == "/api/generate"]) == 2  # one retry
    assert result.memories_created == 1  # nothing lost: the rules extracted it
    assert "malformed JSON twice" in result.warnings[0]
    assert store.get(result.created_ids[0]).text == STRONG


def test_ollama_down_warns_and_uses_the_rules(tmp_path: Path, clock) -> None:
    settings = Settings(ollama_host="http://127.0.0.1:9", ollama_timeout_s=1.0)
    with MemoryStore(tmp_path / "db", embedder="hashing", clock=clock,
                     settings=settings) as store:
        result = store.add_conversation([STRONG], session_id="s1")  # default: Ollama
        assert result.memories_created == 1
        assert result.warnings and "Ollama unavailable" in result.warnings[0]


def test_ollama_summary_and_embedder_through_the_fake(tmp_path: Path, clock) -> None:
    with fake_ollama(["Nadia moved to Ibadan in March 2026."]) as fake:
        settings = Settings(ollama_host=fake.url, ollama_model="fake")
        with MemoryStore(tmp_path / "db", embedder=OllamaEmbedder("fake", host=fake.url),
                         clock=clock, settings=settings) as store:
            memory = store.add("Nadia said she moved to Ibadan in March 2026 for lab work")
            result = store.archive(memory.id, create_summary=True)
            assert result.summary == "Nadia moved to Ibadan in March 2026."
            assert store.events(memory.id)[-1].metadata["summarySource"] == "ollama"
            assert store.embedder.name == "ollama:fake" and store.embedder.dim == 16
        assert any(path == "/api/embed" for path, _ in fake.requests)


# -- benchmark corpora -----------------------------------------------------------------
def test_locomo_loader_counts(locomo: Path) -> None:
    from ingest.locomo import load_locomo

    conversations = load_locomo(locomo)
    assert len(conversations) == 10
    assert sum(len(c.turns) for c in conversations) == 5882
    assert sum(len(c.questions) for c in conversations) == 1986
    assert sum(1 for c in conversations for q in c.questions if q.evidence) == 1982
    repaired = {q.raw_evidence: q.evidence for c in conversations for q in c.questions}
    assert repaired[("D8:6; D9:17",)] == ("D8:6", "D9:17")
    assert repaired[("D9:1 D4:4 D4:6",)] == ("D9:1", "D4:4", "D4:6")
    first = conversations[0]
    assert first.sample_id == "conv-26" and first.speakers == ("Caroline", "Melanie")
    assert first.sessions[0].date.isoformat() == "2023-05-08T13:56:00+00:00"
    assert first.turns[4].caption.startswith("a photo of")


def test_locomo_ingest(store: MemoryStore, locomo: Path) -> None:
    from ingest.locomo import ingest_conversation, load_locomo

    conversation = load_locomo(locomo)[0]
    ids = ingest_conversation(store, conversation, owner="conv-26")
    assert len(ids) == len(conversation.turns) == store.stats().memories
    memory = store.get("urn:locomo:conv-26:D1:5")
    assert memory.text.startswith("Caroline: The transgender stories")
    assert memory.text.endswith("[image: a photo of a dog walking past a wall with a painting "
                                "of a woman]")
    assert memory.provenance["dia_id"] == "D1:5" and memory.created.year == 2023
    stats = store.stats()
    assert stats.edges["co_occurs"] == len(ids) - len(conversation.sessions)
    assert stats.edges["references"] > 0
    # every derived reference joins two turns that share the entity it names, the newer
    # turn (or one of the same session date) pointing at the older
    entities = {m.id: set(m.entities) for m in store.memories()}
    created = {m.id: m.created for m in store.memories()}
    rows = store.cypher("MATCH (a:Memory)-[r:REFERENCES]->(b:Memory) RETURN a.id AS a, "
                        "b.id AS b, r.source AS source")
    assert len(rows) == stats.edges["references"]
    for row in rows:
        kind, _, entity = row["source"].partition(":")
        assert kind == "entity" and entity in entities[row["a"]] & entities[row["b"]], row
        assert created[row["a"]] >= created[row["b"]], row
    again = ingest_conversation(store, conversation, owner="conv-26")
    assert again == ids and store.stats() == stats


def test_missing_corpus_says_where_to_get_it(tmp_path: Path) -> None:
    from ingest.locomo import load_locomo
    from ingest.longmemeval import load_longmemeval

    with pytest.raises(RecordError, match="snap-research/locomo"):
        load_locomo(tmp_path / "nope.json")
    with pytest.raises(RecordError, match="xiaowu0162/LongMemEval"):
        load_longmemeval(tmp_path / "nope.json")


def test_longmemeval_loader_and_ingest(store: MemoryStore, tmp_path: Path) -> None:
    from ingest.longmemeval import ingest_question, load_longmemeval

    data = [{
        "question_id": "q1", "question_type": "single-session-user",
        "question": "Which city did I move to?", "answer": "Ibadan",
        "question_date": "2023/05/30 (Tue) 23:40",
        "haystack_session_ids": ["sharegpt_a_0", "answer_b_1"],
        "haystack_dates": ["2023/05/20 (Sat) 02:21", "2023/05/21 (Sun) 10:00"],
        "haystack_sessions": [
            [{"role": "user", "content": "Tell me a joke."},
             {"role": "assistant", "content": "Why did the chicken..."}],
            [{"role": "user", "content": "I just moved to Ibadan.", "has_answer": True},
             {"role": "assistant", "content": "Congratulations!"},
             {"role": "user", "content": "Any tips for the rainy season?"}]],
        "answer_session_ids": ["answer_b_1"],
    }, {"question_id": "q2_abs", "question": "?", "answer": "", "haystack_session_ids": [],
        "haystack_sessions": [], "answer_session_ids": []}]
    path = tmp_path / "lme.json"
    path.write_text(json.dumps(data))
    questions = load_longmemeval(path)
    assert [q.abstention for q in questions] == [False, True]
    q = questions[0]
    assert q.gold_sessions == ("answer_b_1",) and q.sessions[1].date.day == 21
    sessions = ingest_question(store, q)
    assert len(sessions) == 3  # user turns only
    assert set(sessions.values()) == {"sharegpt_a_0", "answer_b_1"}
    hit = store.recall("moved to Ibadan", k=1, preset="fulltext")[0]
    assert sessions[hit.memory.id] == "answer_b_1"
    assert "has_answer" not in hit.memory.provenance  # the store hears no label
    assert "answer" not in (hit.memory.session or "")
    packed = tmp_path / "lme.json.gz"  # the development split ships gzip-compressed
    packed.write_bytes(gzip.compress(path.read_bytes()))
    assert load_longmemeval(packed) == questions
    packed.write_bytes(gzip.compress(path.read_bytes())[:40])
    with pytest.raises(RecordError, match="not LongMemEval JSON"):
        load_longmemeval(packed)


# -- derived links ---------------------------------------------------------------------
def _references(store: MemoryStore) -> set[tuple[str, str, str]]:
    rows = store.cypher("MATCH (a:Memory)-[r:REFERENCES]->(b:Memory) RETURN a.id AS a, "
                        "b.id AS b, r.source AS source")
    return {(r["a"], r["b"], r["source"]) for r in rows}


def test_derive_links_owner_and_numbers(store: MemoryStore, clock) -> None:
    def add(text: str, memory_id: str, owner: str) -> str:
        clock.advance(minutes=1)
        return store.add(text, id=memory_id, owner=owner).id

    first = add("Met Kofi at the Lagos office", "urn:d:first", "alice")
    theirs = add("Kofi visited the Lagos office", "urn:d:theirs", "bob")
    later = add("Kofi moved to the Lagos office", "urn:d:later", "alice")
    invoice = add("Invoice 48213 paid on 2026-05-01 at 09:30", "urn:d:invoice", "alice")
    refund = add("Refund 48213 sent on 2026-05-01 at 09:30", "urn:d:refund", "alice")
    mention = add("See urn:d:invoice for the amount", "urn:d:mention", "alice")
    # numbers, dates and times are no entities (a memory keeps its times apart)
    assert not {"48213", "2026-05-01", "09:30"} & set(store.get(refund).entities)
    assert store.get(refund).times_from
    created = store.derive_links()
    # the newer memory references the older, within one owner; shared numbers, dates and
    # times link nothing; a memory that names another's id references it
    assert _references(store) == {(later, first, "entity:lagos"), (mention, invoice, "mention")}
    assert created == 2
    assert store.derive_links() == 0  # existing edges are not made twice
    assert theirs not in {x.other for x in store.links(first)}


def test_derive_links_max_df(store: MemoryStore, clock) -> None:
    ids = []
    for i in range(5):
        clock.advance(minutes=1)
        ids.append(store.add(f"note {i}", id=f"urn:df:{i}", entities=["zephyr"]).id)
    pair = []
    for i in range(2):
        clock.advance(minutes=1)
        pair.append(store.add(f"pair {i}", id=f"urn:df:p{i}", entities=["quasar"]).id)
    # "zephyr" is in 5 memories: more than max_df + 1 = 4, too common to link
    assert store.derive_links(max_df=3) == 1
    assert _references(store) == {(pair[1], pair[0], "entity:quasar")}
    assert store.derive_links(max_df=4) == 10  # each memory references every older one
    assert _references(store) - {(pair[1], pair[0], "entity:quasar")} == {
        (ids[j], ids[i], "entity:zephyr") for i in range(5) for j in range(i + 1, 5)}
    [weight] = {x.weight for x in store.links(ids[4]) if x.kind == "references"}
    assert weight == pytest.approx(1 / math.log(1 + 5))


def test_derive_links_limit_caps_links_per_memory(store: MemoryStore, clock) -> None:
    ids = []
    for i in range(4):
        clock.advance(minutes=1)
        ids.append(store.add(f"note {i}", id=f"urn:lim:{i}", entities=["nebula"]).id)
    assert store.derive_links([ids[-1]], max_df=10, limit=1) == 1


def test_derived_links_between_simultaneous_memories_go_one_way(store: MemoryStore) -> None:
    a = store.add("Met Kofi at the Lagos office", id="urn:same:a").id
    b = store.add("Kofi moved to the Lagos office", id="urn:same:b").id
    assert store.get(a).created == store.get(b).created  # the test clock does not move
    store.derive_links()
    assert len(_references(store)) == 1
    assert store.evaluate(a).metrics.cross_reference_count + store.evaluate(
        b).metrics.cross_reference_count == 1


# -- the Ollama embedder when the server is down -------------------------------------------
def test_ollama_embedder_with_the_server_down(tmp_path: Path, clock) -> None:
    with fake_ollama() as fake:
        url = fake.url
        settings = Settings(ollama_host=url, ollama_timeout_s=2.0)
        with MemoryStore(tmp_path / "db", embedder=OllamaEmbedder("fake", host=url),
                         clock=clock, settings=settings) as store:
            kept = store.add("Orchard deploys with fly", kind="procedural")
    # the server is gone (its port closed); the store was embedded by it
    with MemoryStore(tmp_path / "db", clock=clock, settings=settings) as store:
        assert store.embedder.name == "ollama:fake"
        assert store.get(kept.id).text == "Orchard deploys with fly"  # reads need no model
        [hit] = store.recall("orchard fly", preset="fulltext", record_access=False)
        assert hit.memory.id == kept.id  # full text needs no model either
        with pytest.raises(BackendUnavailableError, match=f"Ollama at {url}"):
            store.recall("orchard fly")  # the vector channel does
        with pytest.raises(BackendUnavailableError, match="model 'fake'"):
            store.add("written while the model is away")
        with pytest.raises(BackendUnavailableError):
            store.update(kept.id, text="Orchard deploys with fly to jnb")
        assert [m.text for m in store.memories()] == ["Orchard deploys with fly"]
        assert store.stats().versions == 1  # nothing half written


def test_a_new_store_on_an_unreachable_ollama(tmp_path: Path, clock) -> None:
    embedder = OllamaEmbedder("fake", host="http://127.0.0.1:9", timeout=2.0)
    with pytest.raises(BackendUnavailableError, match=r"127\.0\.0\.1:9"):
        embedder.dim  # noqa: B018 -- the dimension is asked of the server
    with MemoryStore(tmp_path / "db", embedder=embedder, clock=clock) as store:
        with pytest.raises(BackendUnavailableError):
            store.add_many([{"text": f"note {i}"} for i in range(3)])
        assert store.stats().memories == 0


@pytest.mark.parametrize(("host", "model", "warns"), [
    ("served", "fake", None),
    ("http://127.0.0.1:9", "fake", "warning: Ollama at http://127.0.0.1:9 did not embed"),
    ("served", "nomic-embed-text", "pull it there first (ollama pull nomic-embed-text)"),
    ("http://[::1", "fake", "warning: Ollama at http://[::1 is unreachable: "),
])
def test_init_of_an_ollama_store_says_when_the_server_cannot_embed(
        tmp_path: Path, host: str, model: str, warns: str | None) -> None:
    from click.testing import CliRunner

    from graphmem.cli import cli

    with fake_ollama() as fake:
        env = {"GRAPHMEM_OLLAMA_HOST": fake.url if host == "served" else host,
               "GRAPHMEM_OLLAMA_TIMEOUT_S": "2"}
        db = str(tmp_path / "db")
        result = CliRunner().invoke(cli, ["--db", db, "init", "--embedder", f"ollama:{model}"],
                                    env=env)
        added = CliRunner().invoke(cli, ["--db", db, "add", "Orchard deploys with fly"],
                                   env=env)
    assert result.exit_code == 0, result.output
    assert f"embedder ollama:{model}" in result.stdout
    assert (tmp_path / "db").exists()  # made either way: the server may start later
    if warns is None:
        assert result.stderr == "" and added.exit_code == 0
    else:
        assert warns in result.stderr and len(result.stderr.splitlines()) == 1
        assert added.exit_code == 1 and added.stderr.startswith("error: Ollama at ")


def test_useful_feedback_on_a_candidate_commits_once(store: MemoryStore,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """The counters, the feedback event, the co-occurrence with the recall's other useful
    memory and the confirmation of the candidate are one write batch, committed once."""
    weak = store.add_conversation([WEAK], session_id="s1")
    other = store.add("the oat milk goes in the fridge door").id
    [candidate] = weak.candidate_ids
    commits = record_calls(monkeypatch, store._ctx.engine, "commit")
    store._recall._recent.append(_RecallRecord("milk", [other, candidate], {other}))
    memory = store.feedback(candidate, useful=True, query="milk")
    assert len(commits) == 1
    assert memory.status is Status.ACTIVE and memory.useful_count == 1
    assert [e.event_type.value for e in store.events(candidate)][-2:] == ["feedback",
                                                                         "activate"]
    assert [(x.kind, x.other) for x in store.links(candidate)] == [("co_occurs", other)]
    assert store.get(candidate) == memory
