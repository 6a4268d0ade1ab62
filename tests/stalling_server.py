"""A loopback HTTP/1.1 server that stalls every request for STALL seconds out of every
PERIOD — the classic test of a load generator for coordinated omission. Used by
tests/test_coordinated_omission.py and benchmarks/load_vs_wrk/stall.py."""

from __future__ import annotations

import asyncio
import threading
import time

PERIOD, STALL = 5.0, 1.0  # seconds


class StallingServer:
    """HTTP/1.1 on loopback answering 200 at once, except in the first STALL seconds of
    every PERIOD (its own clock): a request arriving then is held until the stall ends.
    asyncio, so that the hundred requests a stall holds are answered together when it
    ends, not by a hundred threads waking on one interpreter lock."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.origin = time.monotonic()
        ready = threading.Event()
        threading.Thread(target=self._serve, args=(ready,), daemon=True).start()
        ready.wait()

    def _serve(self, ready: threading.Event) -> None:
        asyncio.set_event_loop(self.loop)
        self.server = self.loop.run_until_complete(asyncio.start_server(self._connection, "127.0.0.1", 0, backlog=1024))
        self.port = self.server.sockets[0].getsockname()[1]
        ready.set()
        self.loop.run_forever()

    async def _connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while await reader.readuntil(b"\r\n\r\n"):  # GETs: no body
                phase = (time.monotonic() - self.origin) % PERIOD
                if phase < STALL:
                    await asyncio.sleep(STALL - phase)
                writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()

    def close(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
