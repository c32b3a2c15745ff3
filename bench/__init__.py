"""What measures cheapqa: the lookup and store benchmarks, the stage profile, the HTTP load
tester and the soak. Production code (`service/`, `store/`, `encoder/`) never imports it.

common: what the benches share (default data path, Goal, JSON reports, mode lists, percentiles);
corpus: real text cut into documents with cloze questions; random_readers: random-init readers
(of the default size, or tiny ones for the tests); lookup, store, stages: in-process benches;
load_generator (sends the load), load_orchestrator (starts a server, loads it, stops it),
spawn (starts `cheapqa serve` and waits for /readyz), report, soak: the HTTP load tester and
the soak.
"""
