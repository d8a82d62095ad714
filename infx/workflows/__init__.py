"""Entry points run by CI workflows (``python -m infx.workflows.<name>``)."""
