"""The code snippets of the documentation site: each page includes them, mypy checks them and
``tests/docs/test_snippets.py`` runs them against moto."""
