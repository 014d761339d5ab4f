"""`python -m assistant` is the `assistant` command."""

from assistant.cli.main import main

main()
