"""The `cheapqa` command: one short module per command that parses its arguments, calls one
library function (`encoder/` for data, training and evaluation; `service/` for serve and
worker; `bench/` for what measures) and prints."""
