"""The HTTP load tester (`cheapqa loadtest`) and the in-process request profile.

corpus: real text cut into documents of a chosen token length, with cloze questions;
runner: the httpx load generator (closed or open loop); report: the figures it prints;
server: a `cheapqa serve` subprocess on a loopback port; checkpoints: random-init readers of the
default size for timing before trained ones exist; stages: where one `answers` request's time
goes.
"""
