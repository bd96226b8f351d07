"""The API's keys group (docs/product.md §3.6): keys managed by keys. Its operations (list,
show, create, roll, narrow, revoke), a key's record and its schemas, and where a handed-over
key went; the key's core it calls is apps/api_keys."""
