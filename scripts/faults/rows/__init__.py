"""One module a fault row: its `NUMBER` and `run(setup, options)`, which returns its Rows.
A new row is a new file here; scripts/fault_run.py finds it."""
