// name: lifecycle_events
// description: Lifecycle events since a time, optionally of one type (promote, archive, restore ...).
// param: since TIMESTAMP
// param: event_type STRING = ""
// param: owner STRING = ""
MATCH (e:LifecycleEvent)
WHERE e.timestamp >= $since AND ($event_type = "" OR e.event_type = $event_type)
OPTIONAL MATCH (m:Memory {id: e.memory_id})
WITH e, m
WHERE $owner = "" OR m.owner = $owner
RETURN e.timestamp AS timestamp, e.event_type AS event_type, e.memory_id AS memory_id,
       e.from_state AS from_state, e.to_state AS to_state, e.reason AS reason,
       e.triggered_by AS triggered_by
ORDER BY timestamp, memory_id, e.event_id
