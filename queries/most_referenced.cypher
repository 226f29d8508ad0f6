// name: most_referenced
// description: The memories the most other memories point to (REFERENCES), optionally of one kind.
// param: limit INT64 = 10
// param: kind STRING = ""
MATCH (a:Memory)-[r:REFERENCES]->(m:Memory)
WHERE r.gone IS NULL AND a.id <> m.id AND ($kind = "" OR m.kind = $kind)
RETURN m.id AS id, m.kind AS kind, m.status AS status, count(DISTINCT a.id) AS referenced_by,
       coalesce(m.subject, substring(m.text, 1, 60)) AS label
ORDER BY referenced_by DESC, id
LIMIT $limit
