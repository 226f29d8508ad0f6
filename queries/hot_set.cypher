// name: hot_set
// description: The hot memories (kept in the in-process cache), most used first.
// param: owner STRING = ""
MATCH (m:Memory)
WHERE m.hot AND ($owner = "" OR m.owner = $owner)
RETURN m.id AS id, m.access_count AS accesses, m.last_accessed AS last_accessed,
       m.kind AS kind, m.text AS text
ORDER BY accesses DESC, id
