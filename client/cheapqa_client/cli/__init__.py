"""The client's command line: `cheapqa-client COMMAND`, and the same commands in the full
install's `cheapqa` (cli/main.py registers them from here)."""
