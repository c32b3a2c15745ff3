"""A three-master Redis Cluster on loopback ports, for the tests: three `redis-server
--cluster-enabled yes` processes (each its own port, bus port and directory) joined by
`redis-cli --cluster create`. Missing binaries are an error, never a skip."""

from __future__ import annotations

import shutil
import subprocess
import time
from typing import Any

import redis

from bench.spawn import free_port
from tests.redis_server import RedisProcess


class RedisClusterProcesses:
    def __init__(self, masters: int = 3) -> None:
        self.nodes = [RedisProcess(extra_args=self._node_args()) for _ in range(masters)]

    @staticmethod
    def _node_args() -> list[str]:
        # The bus port is given, not left at port + 10000, which may pass 65535.
        bus_port = str(free_port())
        return ["--cluster-enabled", "yes", "--cluster-port", bus_port,
                "--cluster-node-timeout", "2000"]  # fmt: skip

    @property
    def url(self) -> str:
        """The store URL of the cluster: any node is a seed, the client finds the others."""
        return f"redis+cluster://127.0.0.1:{self.nodes[0].port}"

    def start(self, timeout_s: float = 30.0) -> RedisClusterProcesses:
        cli = shutil.which("redis-cli")
        if cli is None:
            raise RuntimeError("redis-cli is not installed (Debian's redis-tools)")
        try:
            for node in self.nodes:
                node.start()
            nodes = [f"127.0.0.1:{n.port}" for n in self.nodes]
            create = [
                cli,
                "--cluster",
                "create",
                *nodes,
                "--cluster-replicas",
                "0",
                "--cluster-yes",
            ]
            subprocess.run(create, check=True, capture_output=True, timeout=timeout_s)
            deadline = time.monotonic() + timeout_s
            while not all(self._node_ok(n) for n in self.nodes):
                if time.monotonic() > deadline:
                    raise RuntimeError("the cluster never reached cluster_state:ok")
                time.sleep(0.1)
        except BaseException:
            self.cleanup()
            raise
        return self

    def _node_ok(self, node: RedisProcess) -> bool:
        client = redis.Redis(port=node.port, socket_timeout=1)
        try:
            info: Any = client.cluster("info")  # parsed into a dict by redis-py
            return str(info.get("cluster_state")) == "ok" and int(
                info["cluster_known_nodes"]
            ) == len(self.nodes)
        finally:
            client.close()

    def keys_per_node(self) -> list[int]:
        counts = []
        for node in self.nodes:
            client = redis.Redis(port=node.port, socket_timeout=1)
            try:
                counts.append(int(client.dbsize()))
            finally:
                client.close()
        return counts

    def flush(self) -> None:
        for node in self.nodes:
            client = redis.Redis(port=node.port, socket_timeout=1)
            try:
                client.flushall()
            finally:
                client.close()

    def cleanup(self) -> None:
        for node in self.nodes:
            node.cleanup()
