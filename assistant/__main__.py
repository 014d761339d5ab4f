"""`python -m assistant` is the `assistant` command."""

from assistant.cli import main

main()
