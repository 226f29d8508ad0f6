-- lifecycle_events.cypher over PostgreSQL's tables: the same parameters and rows.
SELECT e."timestamp" AS "timestamp", e.event_type AS event_type, e.memory_id AS memory_id,
       e.from_state AS from_state, e.to_state AS to_state, e.reason AS reason,
       e.triggered_by AS triggered_by
  FROM events e
  LEFT JOIN memories m ON m.id = e.memory_id
 WHERE e."timestamp" >= %(since)s AND (%(event_type)s = '' OR e.event_type = %(event_type)s)
   AND (%(owner)s = '' OR m.owner = %(owner)s)
 ORDER BY "timestamp", memory_id, e.event_id
