"""One entity model: a memory's ``entities`` are the names of the knowledge graph's entities
its text mentions (plus the keys by which it points at other memories), never possessive
phrases, words joined across sentences, common capitalised words or a chat's roles."""

from __future__ import annotations

import pytest

from graphmem import MemoryStore, extract_entities


def _graph_names(store: MemoryStore, memory_id: str) -> set[str]:
    """The names of the knowledge graph entities a memory mentions."""
    names = {e.id: e.name for e in store.entities()}
    return {names[m.entity_id] for m in store.mentions(memory_id)}


def test_a_possessive_is_its_owner(mem_store: MemoryStore) -> None:
    memory = mem_store.add("Alice's cat is called Miso")
    assert memory.entities == ("alice", "miso")


def test_a_name_repeated_across_sentences_is_one_entity(mem_store: MemoryStore) -> None:
    memory = mem_store.add("Bob's manager is Carol. Carol works at Acme")
    assert memory.entities == ("bob", "carol", "acme")


def test_common_capitalised_words_are_no_entities(mem_store: MemoryStore) -> None:
    assert mem_store.add("Great idea. Sounds good to me. Thanks!").entities == ()
    # a verb that opens a note is not part of the name after it
    assert mem_store.add("Met Kofi at the Lagos office").entities == ("kofi", "lagos")
    # dates and bare numbers are times and numbers, not entities
    assert mem_store.add("Paid 480 on 2026-05-01 at 09:30 in May").entities == ()


@pytest.mark.parametrize("speaker", ["assistant", "AI", "bot"])
def test_an_assistant_speaker_is_no_person(mem_store: MemoryStore, speaker: str) -> None:
    memory = mem_store.add("I work at Acme and booked a table for Tom",
                           owner="tess", provenance={"speaker": speaker})
    assert memory.entities == ("acme", "tom")
    assert speaker.lower() not in {e.name for e in mem_store.entities(owner="tess")}
    # its "I" is nobody of the user's world: no first-person fact about anyone
    assert mem_store.facts(owner="tess") == []
    # nor does a dialogue label make the assistant a person
    labelled = mem_store.add("Assistant: I work at Acme. I've set a reminder for Tom.",
                             owner="tess")
    assert labelled.entities == ("acme", "tom")
    assert "assistant" not in {e.name for e in mem_store.entities(owner="tess")}
    assert mem_store.facts(owner="tess") == []


def test_a_person_speaker_is_an_entity(mem_store: MemoryStore) -> None:
    memory = mem_store.add("I work at Acme and booked a table for Tom", owner="tess",
                           provenance={"speaker": "Tess"})
    assert memory.entities == ("tess", "acme", "tom")
    assert [f.predicate for f in mem_store.facts(owner="tess")] == ["works_at"]


@pytest.mark.parametrize(("text", "speaker"), [
    ("Bob's manager is Carol. Carol works at Acme", None),
    ("I moved to Lisbon and my sister Anna works at Google", "Caroline"),
    ("Caroline: I went to the LGBTQ support group on 8 May 2023", None),
    ("We adopted a puppy named Biscuit in March", "Mel"),
    ("I love jazz and hiking", "Tess"),  # a fact's ends are entities, named or not
    ("Thanks! I'll take the Friday slot with Dr. Okafor at St Mary's Hospital", "Ann"),
])
def test_a_memorys_entities_are_its_graph_entities(mem_store: MemoryStore, text: str,
                                                    speaker: str | None) -> None:
    memory = mem_store.add(text, owner="u", provenance={"speaker": speaker} if speaker else None)
    assert memory.entities, text
    assert set(memory.entities) == _graph_names(mem_store, memory.id)
    # the public function says the same as the write path
    assert extract_entities(text, speaker=speaker) == memory.entities


def test_keys_to_other_memories_stay_for_links(mem_store: MemoryStore) -> None:
    """Memory ids, wiki pages and codes are no graph entities, but ``derive_links``
    follows them."""
    memory = mem_store.add("Moved bed-18 after v1.9.0, see urn:d:invoice and [wiki/ops]")
    assert memory.entities == ("urn:d:invoice", "wiki/ops", "bed-18", "v1.9.0")
    assert _graph_names(mem_store, memory.id) == set()
