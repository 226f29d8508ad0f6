-- promotion_candidates.cypher over PostgreSQL's tables: the same parameters and rows.
SELECT m.id AS id, m.access_count AS accesses, m.importance AS importance,
       coalesce(m.xref_count, 0) AS xrefs, m.tags AS tags, m.text AS text
  FROM memories m
 WHERE m.status = 'active' AND m.kind = 'episodic' AND (%(owner)s = '' OR m.owner = %(owner)s)
   AND (m.access_count >= %(access_threshold)s OR m.importance >= %(importance_threshold)s
        OR coalesce(m.xref_count, 0) >= %(xref_threshold)s
        OR 'critical' = ANY (m.tags) OR 'permanent' = ANY (m.tags))
 ORDER BY accesses DESC, importance DESC, id
