"""What the tests run on, apart from the simulators of tests/upstream: the stacks and variants every contract runs
over (`contract_stacks.py`), fresh virtualenvs and the copy of the repository pip installs from
(`fresh_install.py`), and checkov's scan of rendered objects (`checkov_scan.py`)."""
