"""``GraphmemStore`` against LangGraph itself: one scripted run of every operation on it
and on LangGraph's ``InMemoryStore`` (the oracle), embedded and through a sidecar; owner
isolation; recall as semantic search; and a compiled graph whose node remembers across
threads with an ``InMemorySaver`` checkpointer."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypedDict

import pytest
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, StateGraph
from langgraph.runtime import Runtime
from langgraph.store.base import BaseStore, InvalidNamespaceError
from langgraph.store.memory import InMemoryStore

from graphmem import InvalidInputError, MemoryStore, Settings, Status
from graphmem.client import Client, connect
from graphmem.integrations.langgraph import GraphmemSearchItem, GraphmemStore
from graphmem.sidecar import Tokens
from tests._servers import running_sidecar
from tests.conftest import Clock

NS_A = ("memories", "alice")
NS_A_FOOD = ("memories", "alice", "food")
NS_B = ("memories", "bob")


def _store(tmp_path: Path, name: str = "db") -> MemoryStore:
    return MemoryStore(tmp_path / name, embedder="hashing", settings=Settings())



def _plain(result: Any) -> Any:
    """A store result without its times and scores (the two stores stamp their own)."""
    if isinstance(result, list):
        return [_plain(r) for r in result]
    if result is None or isinstance(result, tuple | int):
        return result
    return (result.namespace, result.key, result.value)


def _script(store: BaseStore) -> list[Any]:
    """Every operation of the store API, results recorded in order."""
    seen: list[Any] = []
    store.put(NS_A, "tea", {"text": "Alice drinks green tea", "rating": 5,
                            "meta": {"source": "chat", "tags": ["drink", "morning"]}})
    store.put(NS_A_FOOD, "lunch", {"text": "Alice eats ramen for lunch", "rating": 3})
    store.put(NS_B, "tea", {"text": "Bob drinks black coffee", "rating": 4})
    store.put(("docs", "bob", "v1"), "readme", {"title": "Read me", "pages": 2})
    seen.append(store.get(NS_A, "tea"))
    seen.append(store.get(NS_B, "tea"))
    seen.append(store.get(NS_A, "missing"))
    store.put(NS_A, "tea", {"text": "Alice switched to oolong tea", "rating": 4})
    seen.append(store.get(NS_A, "tea"))
    store.put(NS_A, "tea", {"text": "Alice switched to oolong tea", "rating": 4})
    store.put(NS_A, "walk", {"text": "Alice walks the dog at dawn", "rating": 2})
    store.delete(NS_A, "walk")
    store.delete(NS_A, "never-there")
    seen.append(store.get(NS_A, "walk"))
    store.put(NS_A, "dawn", {"text": "Alice wakes at dawn", "rating": 1})
    store.delete(NS_A, "dawn")
    store.put(NS_A, "dawn", {"text": "Alice wakes at seven now", "rating": 1})
    seen.append(store.get(NS_A, "dawn"))
    for prefix, filter_ in [(("memories",), None), (NS_A, None), (("memories",), {"rating": 4}),
                            (("memories",), {"rating": {"$gte": 3, "$lt": 5}}),
                            (("memories",), {"rating": {"$ne": 4}}),
                            (("memories",), {"meta": {"source": "chat"}}), ((), None),
                            (("docs", "bob"), {"pages": {"$gt": 1}}), (("nothing",), None)]:
        seen.append(sorted(_plain(store.search(prefix, filter=filter_, limit=50))))
    seen.append(len(store.search(("memories",), limit=2)))
    seen.append(len(store.search(("memories",), limit=2, offset=2)))
    seen.append(store.list_namespaces())
    seen.append(store.list_namespaces(prefix=("memories",)))
    seen.append(store.list_namespaces(prefix=("memories", "*", "food")))
    seen.append(store.list_namespaces(suffix=("v1",)))
    seen.append(store.list_namespaces(suffix=("*", "v1")))
    seen.append(store.list_namespaces(prefix=("memories",), max_depth=2))
    seen.append(store.list_namespaces(max_depth=1))
    seen.append(store.list_namespaces(limit=2, offset=1))
    seen.append(store.batch([]))
    # last: InMemoryStore lists a namespace once anything asked for it, even a get
    seen.append(store.get(("memories",), "tea"))
    return [_plain(s) for s in seen]


def _oracle() -> list[Any]:
    return _script(InMemoryStore())


def test_every_operation_answers_as_langgraphs_own_store(memories: MemoryStore) -> None:
    expected = _oracle()
    assert expected[1] == (NS_B, "tea", {"text": "Bob drinks black coffee", "rating": 4})
    assert _script(GraphmemStore(memories, owner_label=1)) == expected
    # one owner for everything: the same answers
    with MemoryStore(":memory:", embedder="hashing") as other:
        assert _script(GraphmemStore(other, owner="team")) == expected
        assert {m.owner for m in other.memories()} == {"team"}


def test_the_async_api_answers_as_the_sync_one(memories: MemoryStore) -> None:
    store = GraphmemStore(memories, owner_label=1)

    async def run() -> list[Any]:
        await store.aput(NS_A, "tea", {"text": "Alice drinks green tea"})
        await store.aput(NS_B, "tea", {"text": "Bob drinks coffee"})
        await store.aput(NS_B, "gone", {"text": "to delete"})
        await store.adelete(NS_B, "gone")
        found = await store.asearch(NS_A, query="green tea")
        return [await store.aget(NS_A, "tea"), await store.aget(NS_B, "gone"),
                [hit.key for hit in found], await store.alist_namespaces(prefix=("memories",))]

    item, gone, keys, namespaces = asyncio.run(run())
    assert item.value == {"text": "Alice drinks green tea"}
    assert gone is None and keys == ["tea"]
    assert namespaces == [NS_A, NS_B]


def test_a_batch_reads_before_it_writes_and_the_last_write_wins(memories: MemoryStore) -> None:
    from langgraph.store.base import GetOp, PutOp

    for store in (InMemoryStore(), GraphmemStore(memories, owner_label=1)):
        results = store.batch([PutOp(NS_A, "k", {"v": 1}), GetOp(NS_A, "k"),
                               PutOp(NS_A, "k", {"v": 2}), PutOp(NS_A, "j", {"v": 3}),
                               PutOp(NS_A, "j", None)])
        assert results == [None, None, None, None, None]
        assert store.get(NS_A, "k").value == {"v": 2}  # type: ignore[union-attr]
        assert store.get(NS_A, "j") is None


def test_items_are_memories_that_keep_their_history(memories: MemoryStore) -> None:
    store = GraphmemStore(memories, owner_label=1)
    store.put(NS_A, "tea", {"text": "Alice drinks green tea", "n": 1})
    first = store.get(NS_A, "tea")
    store.put(NS_A, "tea", {"text": "Alice drinks oolong", "n": 2})
    second = store.get(NS_A, "tea")
    assert first is not None and second is not None
    assert second.created_at == first.created_at and second.updated_at >= first.updated_at
    held = [m for m in memories.memories() if m.status is Status.ACTIVE]
    old, new = sorted(held, key=lambda m: bool(m.superseded_by))[::-1]
    assert old.text == "Alice drinks green tea" and old.superseded_by == (new.id,)
    assert new.text == "Alice drinks oolong" and new.owner == "alice"
    assert new.project == "memories/alice" and "langgraph" in new.tags
    # a delete tombstones by default (reversible) ...
    store.delete(NS_A, "tea")
    assert memories.get(new.id).status is Status.TOMBSTONED
    assert store.search(NS_A, query="oolong") == []
    # a put after the delete continues the chain: the tombstoned memory is superseded
    store.put(NS_A, "tea", {"text": "Alice drinks jasmine tea"})
    again = memories.get(memories.get(new.id).superseded_by[0])
    assert again.text == "Alice drinks jasmine tea" and store.get(NS_A, "tea") is not None
    assert store.get(NS_A, "tea").created_at > second.created_at  # type: ignore[union-attr]
    # a correction made outside LangGraph replaces the item: it reads as deleted
    memories.correct(again.id, "Alice gave up tea")
    assert store.get(NS_A, "tea") is None
    store.put(NS_A, "tea", {"text": "Alice drinks tea again"})
    assert store.get(NS_A, "tea").value == {"text": "Alice drinks tea again"}  # type: ignore[union-attr]
    # ... with erase, a delete forgets every value the item had
    erasing = GraphmemStore(memories, owner_label=1, erase=True)
    erasing.put(NS_A, "secret", {"text": "Alice's door code is 4411"})
    erasing.put(NS_A, "secret", {"text": "Alice's door code is 9102"})
    codes = [m.id for m in memories.memories() if "door code" in m.text]
    assert len(codes) == 2
    erasing.delete(NS_A, "secret")
    assert [(memories.get(i).status, memories.get(i).text) for i in codes] \
        == [(Status.FORGOTTEN, "")] * 2
    assert erasing.get(NS_A, "secret") is None
    assert "secret" not in [h.key for h in erasing.search(NS_A, query="door code")]
    # the key can be used again (a new chain: the forgotten ids stay taken)
    erasing.put(NS_A, "secret", {"text": "Alice has no door code any more"})
    assert erasing.get(NS_A, "secret").value == {  # type: ignore[union-attr]
        "text": "Alice has no door code any more"}


def test_search_with_a_query_is_recall_with_explanations(clock: Clock) -> None:
    # a frozen clock: activation does not decay between two searches
    with MemoryStore(":memory:", embedder="hashing", settings=Settings(),
                     clock=clock) as memories:
        _search_is_recall(memories)


def _search_is_recall(memories: MemoryStore) -> None:
    store = GraphmemStore(memories, owner_label=1, fields=["text"])
    store.put(NS_A, "tea", {"text": "Alice drinks green tea every morning", "kind": "drink"})
    store.put(NS_A, "code", {"text": "Alice writes TypeScript at work", "kind": "work"})
    store.put(NS_A_FOOD, "lunch", {"text": "Alice eats ramen for lunch", "kind": "food"})
    store.put(NS_A, "hidden", {"text": "Alice hides green tea"}, index=False)
    memories.add("green tea is not a langgraph item", owner="alice")
    hits = store.search(("memories", "alice"), query="green tea morning")
    assert hits[0].key == "tea" and hits[-1].key == "hidden" and len(hits) == 4
    # the unindexed item only fills the page, unscored and unexplained
    assert hits[-1].score is None and hits[-1].explanation is None  # type: ignore[attr-defined]
    assert all(isinstance(h, GraphmemSearchItem) and h.explanation is not None
               for h in hits[:-1])
    top = hits[0]
    assert isinstance(top, GraphmemSearchItem) and top.explanation is not None
    assert top.score == pytest.approx(top.explanation.final)
    assert top.explanation.lines()[0].startswith("preset default")
    assert [h.key for h in store.search(("memories",), query="ramen",
                                        filter={"kind": "food"})] == ["lunch"]
    # searches count as uses of what they return only when asked (graphmem's recall) ...
    memories.flush()
    uses = {m.id: m.access_count for m in memories.memories()}
    assert uses[top.memory_id] == 0
    counting = GraphmemStore(memories, owner_label=1, record_access=True)
    counting.search(("memories",), query="ramen")
    memories.flush()
    assert memories.get(top.memory_id).access_count >= 1
    uses = {m.id: m.access_count for m in memories.memories()}
    # ... by default not: then the pages of one search agree
    paging = GraphmemStore(memories, owner_label=1)
    everything = paging.search(("memories",), query="Alice", limit=10)
    assert len(everything) == 4
    assert [h.key for h in paging.search(("memories",), query="Alice", limit=2, offset=1)] \
        == [h.key for h in everything[1:3]]
    memories.flush()
    assert {m.id: m.access_count for m in memories.memories()} == uses
    # only the text at ``fields`` is the memory's text
    assert {m.text for m in memories.memories() if "langgraph" in m.tags} >= {
        "Alice drinks green tea every morning"}


def test_one_owner_never_sees_another(memories: MemoryStore) -> None:
    store = GraphmemStore(memories, owner_label=1)
    store.put(NS_A, "tea", {"text": "Alice drinks green tea"})
    store.put(NS_A_FOOD, "lunch", {"text": "Alice eats ramen"})
    store.put(NS_B, "coffee", {"text": "Bob drinks black coffee"})
    assert {m.owner for m in memories.memories()} == {"alice", "bob"}
    assert store.get(NS_B, "tea") is None
    assert [h.key for h in store.search(NS_B, query="green tea ramen")] == ["coffee"]
    assert [h.key for h in store.search(NS_B)] == ["coffee"]
    assert store.list_namespaces(prefix=NS_B) == [NS_B]
    assert store.list_namespaces(prefix=("memories", "*")) == [NS_A, NS_A_FOOD, NS_B]
    # stores bound to one owner each hold their own item under the same namespace and key
    carol, dave = GraphmemStore(memories, owner="carol"), GraphmemStore(memories, owner="dave")
    carol.put(("prefs",), "drink", {"text": "Carol drinks milk"})
    dave.put(("prefs",), "drink", {"text": "Dave drinks water"})
    assert carol.get(("prefs",), "drink").value == {"text": "Carol drinks milk"}  # type: ignore[union-attr]
    assert [h.key for h in dave.search(("prefs",), query="milk")] == ["drink"]
    assert dave.search(("prefs",), query="milk")[0].value == {"text": "Dave drinks water"}
    # a store bound to one owner sees nothing of another's, whatever the prefix
    bob = GraphmemStore(memories, owner="bob")
    assert [h.key for h in bob.search(("memories",), query="green tea")] == ["coffee"]
    assert [h.key for h in bob.search(())] == ["coffee"]
    assert bob.list_namespaces() == [NS_B] and bob.get(NS_A, "tea") is None


def test_through_a_sidecar_a_token_bounds_what_the_store_sees(tmp_path: Path) -> None:
    tokens = Tokens.from_mapping({
        "tok-alice-0123456789": {"owner": "alice", "scopes": ["read", "write"]},
        "tok-bob-0123456789ab": {"owner": "bob", "scopes": ["read", "write"]}})
    with _store(tmp_path) as served, running_sidecar(served, tokens) as url:
        alice = GraphmemStore(connect(url, token="tok-alice-0123456789"))
        bob = GraphmemStore(connect(url, token="tok-bob-0123456789ab"))
        alice.put(NS_A, "tea", {"text": "Alice drinks green tea"})
        bob.put(NS_B, "coffee", {"text": "Bob drinks black coffee"})
        assert {m.owner for m in served.memories()} == {"alice", "bob"}
        assert bob.get(NS_A, "tea") is None
        assert [h.key for h in bob.search((), query="green tea")] == ["coffee"]
        assert bob.list_namespaces() == [NS_B]
        # a namespace that names another owner is refused by the sidecar
        with pytest.raises(InvalidInputError):
            GraphmemStore(connect(url, token="tok-bob-0123456789ab"),
                          owner_label=1).put(NS_A, "x", {"text": "not mine"})
        for client in (alice.memories, bob.memories):
            assert isinstance(client, Client)
            client.close()


def test_the_operations_answer_as_langgraphs_own_store_through_a_sidecar(
        tmp_path: Path) -> None:
    expected = _oracle()
    with _store(tmp_path) as served, running_sidecar(served) as url, connect(url) as client:
        assert _script(GraphmemStore(client, owner_label=1)) == expected


def test_bad_input_is_refused_before_anything_is_written(memories: MemoryStore) -> None:
    store = GraphmemStore(memories, owner_label=1)
    cases: list[tuple[Callable[[], Any], type[Exception], str]] = [
        (lambda: store.put(("memories",), "k", {"a": "b"}), InvalidNamespaceError, "label 1"),
        (lambda: store.put(("langgraph", "x"), "k", {"a": "b"}), InvalidNamespaceError,
         "langgraph"),
        (lambda: store.put(NS_A, "k", {"when": datetime(2026, 1, 1, tzinfo=UTC)}),
         InvalidInputError, "JSON"),
        (lambda: store.put(NS_A, "k", {"a": "b"}, ttl=5), NotImplementedError, "TTL"),
        (lambda: store.search(NS_A, filter={"a": {"$regex": "x"}}), InvalidInputError,
         "$regex"),
        (lambda: GraphmemStore(memories, owner_label=-1), InvalidInputError, "owner_label"),
        (lambda: GraphmemStore(memories, owner_label=1, owner="x"), InvalidInputError,
         "not both"),
    ]
    store.put(NS_A, "seed", {"a": "b"})
    for call, error, words in cases:
        with pytest.raises(error, match=words.replace("$", r"\$")):
            call()
    assert len(memories.memories()) == 1


class State(TypedDict):
    user: str
    message: str
    reply: str


def _graph(store: BaseStore) -> Any:
    """A node that remembers what the user says ("remember ...") and answers from what
    it recalls about the user, in whatever thread."""

    def respond(state: State, runtime: Runtime[None]) -> dict[str, str]:
        assert runtime.store is not None
        namespace = ("memories", state["user"])
        if state["message"].startswith("remember "):
            fact = state["message"].removeprefix("remember ")
            runtime.store.put(namespace, f"fact-{len(fact)}", {"text": fact})
            return {"reply": "noted"}
        hits = runtime.store.search(namespace, query=state["message"], limit=1)
        return {"reply": hits[0].value["text"] if hits else "I know nothing about that"}

    builder = StateGraph(State)
    builder.add_node("respond", respond)
    builder.add_edge(START, "respond")
    builder.add_edge("respond", END)
    return builder.compile(checkpointer=InMemorySaver(), store=store)


def test_a_graph_remembers_across_threads_and_keeps_users_apart(
        memories: MemoryStore) -> None:
    graph = _graph(GraphmemStore(memories, owner_label=1))

    def say(user: str, thread: str, message: str) -> str:
        config = {"configurable": {"thread_id": thread}}
        state = graph.invoke({"user": user, "message": message, "reply": ""}, config)
        return str(state["reply"])

    assert say("alice", "t1", "remember Alice is allergic to peanuts") == "noted"
    assert say("alice", "t2", "what is Alice allergic to?") \
        == "Alice is allergic to peanuts"
    assert say("bob", "t3", "what is Alice allergic to?") == "I know nothing about that"
    # the checkpointer kept each thread's own state
    state = graph.get_state({"configurable": {"thread_id": "t1"}})
    assert state.values["reply"] == "noted"
    assert [m.owner for m in memories.memories()] == ["alice"]

    async def ask() -> Any:
        return await graph.ainvoke({"user": "alice", "message": "peanuts", "reply": ""},
                                   {"configurable": {"thread_id": "t4"}})

    assert asyncio.run(ask())["reply"] == "Alice is allergic to peanuts"


#: The namespaces and listings of LangGraph's own store tests (``test_list_namespaces_*``).
NAMESPACES = [("a", "b", "c"), ("a", "b", "d", "e"), ("a", "b", "d", "i"), ("a", "b", "f"),
              ("a", "c", "f"), ("b", "a", "f"), ("users", "123"), ("users", "456", "settings"),
              ("admin", "users", "789"), ("a", "g"), ("h", "i", "j", "k")]
LISTINGS: list[dict[str, Any]] = [
    {"prefix": ("a", "b")}, {"suffix": ("f",)}, {"prefix": ("a",), "suffix": ("f",)},
    {"prefix": ("a", "b"), "max_depth": 3}, {"prefix": ("a", "b"), "limit": 2},
    {"prefix": ("a", "b"), "offset": 2}, {"prefix": ("a", "*", "f")},
    {"suffix": ("*", "f")}, {"prefix": ("nonexistent",)}, {"prefix": ("users", "123")},
    {"prefix": ("users", "*")}, {"prefix": ("*", "users"), "suffix": ("*", "settings")},
    {"max_depth": 2}, {}, {"limit": 3, "offset": 4}]


@pytest.mark.parametrize("owner_label", [None, 1])
def test_namespace_listings_answer_as_langgraphs_own_tests_expect(
        memories: MemoryStore, owner_label: int | None) -> None:
    oracle, store = InMemoryStore(), GraphmemStore(memories, owner_label=owner_label)
    assert store.list_namespaces() == []
    for target in (oracle, store):
        for i, namespace in enumerate(NAMESPACES):
            target.put(namespace, f"id_{i}", {"data": f"value_{i:02d}"})
    for listing in LISTINGS:
        assert store.list_namespaces(**listing) == oracle.list_namespaces(**listing), listing
    # "langgraph" is LangGraph's own root: refused by put, taken by batch and elsewhere
    from langgraph.store.base import PutOp

    with pytest.raises(InvalidNamespaceError):
        store.put(("langgraph", "foo"), "bar", {"foo": "bar"})
    store.put(("foo", "langgraph", "foo"), "bar", {"foo": "bar"})
    store.batch([PutOp(("langgraph", "foo"), "bar", {"foo": "bar"})])
    assert store.get(("langgraph", "foo"), "bar").value == {"foo": "bar"}  # type: ignore[union-attr]


def test_search_edge_cases_of_langgraphs_own_tests(memories: MemoryStore) -> None:
    oracle, store = InMemoryStore(), GraphmemStore(memories)
    for target in (oracle, store):
        target.put(("test",), "doc1", {"text": "test document"})
        target.put(("test",), "doc2", {"text": "another test document"})
        target.put(("test",), "doc3", {"text": "an unindexed test document"}, index=False)
    for query in ("", None, "test " * 100, "test!@#$%^&*()"):
        assert len(store.search(("test",), query=query)) == 3, query
    # the unindexed item fills a short page, unscored, as in LangGraph's store
    found = store.search(("test",), query="test document", limit=5)
    assert [h.key for h in found][2:] == ["doc3"] and found[2].score is None
    assert all(h.score is not None for h in found[:2])
    assert [h.key for h in store.search(("test",), query="test document", limit=2)] \
        == [h.key for h in found[:2]]


def test_concurrent_async_writes_apply_in_the_order_they_were_made(
        memories: MemoryStore) -> None:
    """LangGraph's concurrency case: puts, deletes, then puts again of the same keys,
    all gathered at once, leave the items there; filtered searches then agree."""
    store = GraphmemStore(memories)
    colors, things = ["red", "blue", "green"], ["apple", "car", "house"]
    docs = [(f"doc{i}", {"text": f"{colors[i % 3]} {things[i % 3]}", "color": colors[i % 3],
                         "index": i}) for i in range(9)]

    async def run() -> list[list[Any]]:
        await asyncio.gather(*[store.aput(("test",), k, v) for k, v in docs],
                             *[store.adelete(("test",), k) for k, _ in docs],
                             *[store.aput(("test",), k, v) for k, v in docs])
        return list(await asyncio.gather(
            store.asearch(("test",), query="apple", filter={"color": "red"}),
            store.asearch(("test",), query="house", filter={"index": {"$gt": 4}}),
            store.asearch(("test",), limit=20)))

    red, late, everything = asyncio.run(run())
    assert {h.key for h in red} == {"doc0", "doc3", "doc6"}
    assert {h.key for h in late} == {"doc5", "doc6", "doc7", "doc8"}
    assert len(everything) == 9
