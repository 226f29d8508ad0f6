// name: wiki_pointers
// description: Wiki pages and the memories that point to them (REFERENCES from Markdown pointers).
// param: owner STRING = ""
MATCH (a:Memory)-[r:REFERENCES]->(w:Memory)
WHERE r.source = "wiki" AND r.gone IS NULL
  AND ($owner = "" OR (a.owner = $owner AND w.owner = $owner))
RETURN w.subject AS page, count(*) AS pointers, list_sort(collect(a.id)) AS from_memories
ORDER BY pointers DESC, page
