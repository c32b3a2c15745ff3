import redis


def test_binary_round_trip_through_real_redis(redis_url: str) -> None:
    client = redis.Redis.from_url(redis_url, decode_responses=False)
    try:
        payload = bytes(range(256)) * 4
        client.set(b"cheapqa:test:blob", payload)
        assert client.get(b"cheapqa:test:blob") == payload
        assert client.delete(b"cheapqa:test:blob") == 1
        assert client.get(b"cheapqa:test:blob") is None
    finally:
        client.close()
