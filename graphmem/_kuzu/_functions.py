"""The functions ad-hoc Cypher may call, by name: an allowlist, not a list of refusals.

Kuzu 0.11.3 has about 240 scalar and aggregate functions, and some of them end the
process on arguments a reader may write (``cost()`` of any shortest path,
``to_microseconds`` of the smallest 64-bit integer, ``regexp_extract`` with a negative
group read outside their buffers) or run without end inside one value, where no time
limit reaches them (``factorial`` of a large number). A function missing from this list is
refused by name before Kuzu sees the statement; the size checks of ``_guard`` still apply
to those it holds (``range``, ``repeat``, the regular expressions, ``levenshtein``, the
reductions). What a reader of memories needs is here: aggregates, the graph's own
functions, texts, lists, maps, numbers, casts and dates.
"""

from __future__ import annotations

__all__ = ["FUNCTIONS", "KEYWORDS"]

FUNCTIONS = frozenset({
    # aggregates
    "avg", "collect", "count", "count_if", "max", "min", "sum",
    # nodes, relationships, paths
    "id", "label", "labels", "nodes", "rels", "relationships", "properties", "length",
    "start_node", "end_node", "offset", "keys", "is_acyclic", "is_trail",
    # lists (and the quantifiers over them)
    "all", "any", "none", "single", "size", "range", "list_creation", "list_concat",
    "list_cat", "array_concat", "array_cat", "list_append", "array_append",
    "array_push_back", "list_prepend", "array_prepend", "array_push_front", "list_contains",
    "list_has", "array_contains", "array_has", "list_position", "list_indexof",
    "array_position", "array_indexof", "list_extract", "list_element", "array_extract",
    "list_slice", "array_slice", "list_sort", "list_reverse_sort", "list_reverse",
    "list_sum", "list_product", "list_distinct", "list_unique", "list_any_value",
    "list_to_string", "list_transform", "list_filter", "list_reduce", "list_has_all",
    "array_value", "array_cosine_similarity", "array_distance", "array_squared_distance",
    "array_dot_product", "array_inner_product",
    # maps, structs, unions
    "map", "map_extract", "map_keys", "map_values", "element_at", "cardinality",
    "struct_extract", "struct_pack", "union_value", "union_tag", "union_extract",
    # null handling
    "coalesce", "ifnull", "nullif",
    # texts
    "lower", "upper", "lcase", "ucase", "tolower", "toupper", "initcap", "trim", "ltrim",
    "rtrim", "left", "right", "substring", "substr", "prefix", "suffix", "starts_with",
    "ends_with", "contains", "concat", "concat_ws", "reverse", "string_split", "str_split",
    "string_to_array", "split_part", "lpad", "rpad", "repeat", "levenshtein",
    "stem", "octet_length", "md5", "sha256", "hash",
    "regexp_matches", "regexp_full_match", "regexp_replace", "regexp_split_to_array",
    "regexp_extract", "regexp_extract_all",
    # numbers
    "abs", "ceil", "ceiling", "floor", "round", "sqrt", "cbrt", "pow", "ln", "log", "log10",
    "log2", "sign", "pi", "sin", "cos", "tan", "asin", "acos", "atan", "atan2", "cot",
    "degrees", "radians", "even", "greatest", "least", "bitwise_and", "bitwise_or",
    "bitwise_xor",
    # casts and types
    "cast", "string", "to_string", "to_int64", "to_int32", "to_int16", "to_int8",
    "to_uint64", "to_uint32", "to_uint16", "to_uint8", "to_double", "to_float", "to_bool",
    "to_date", "to_timestamp", "typeof",
    # dates and times (durations from text: interval('3 days'), not to_days(n))
    "date", "timestamp", "interval", "duration", "current_date", "current_timestamp",
    "date_part", "datepart", "date_trunc", "datetrunc", "dayname", "monthname", "last_day",
    "make_date", "century", "epoch_ms", "to_epoch_ms",
    # JSON, read (the functions that build or walk nested JSON end the process on deep
    # input: ``_guard``)
    "json_extract", "json_valid", "json_keys", "json_array_length",
})

#: Words of Cypher's grammar that an opening bracket may follow without making them a
#: call ("MATCH (", "WHERE (", "NOT (", "IN (", "WSHORTEST(weight)" ...).
KEYWORDS = frozenset({
    "match", "optional", "where", "and", "or", "xor", "not", "in", "return", "with",
    "unwind", "case", "when", "then", "else", "end", "distinct", "by", "skip", "limit",
    "order", "asc", "desc", "ascending", "descending", "as", "is", "null", "union",
    "call", "yield", "exists", "starts", "ends", "create", "merge", "set", "delete",
    "detach", "remove", "on", "shortest", "wshortest", "trail", "acyclic", "walk",
})
