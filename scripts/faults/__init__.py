"""The fault run (scripts/fault_run.py) as a package: the stack it sets up (processes.py,
receiver.py, stack.py, setup.py, what they share in base.py) and one module a row (rows/)."""
