#!/usr/bin/python3
"""latency_proxy.py - a TCP proxy that puts a network between a client and
a server on 127.0.0.1, for bench/run's remote hits across one.

    latency_proxy.py PORTFILE PORT HOST:PORT DELAY_MS [TURNS]

Every byte either way is delivered DELAY_MS after it was read (a round trip
costs twice that, bandwidth is not limited), in order, each connection to
HOST:PORT its own; an end of stream too.

With TURNS, a file, it counts round trips for the tests: a line "connect N"
for each connection (N its number), and a line "request N" each time the
client speaks after the server did, or first (its turn: what it sends
before it waits for an answer), written as that turn's first bytes arrive,
before they are passed on; so when the client has its answers, its turns
are in the file.  Pipelined requests are one turn.  Our own: tc's netem needs a
kernel module and privileges a CI machine may lack, and Debian packages no
such proxy (toxiproxy is not in Debian).

Readiness as fake_remote.py's: listens on 127.0.0.1:PORT (0: the kernel
picks one), writes the port to PORTFILE once it is bound (whole, by
rename), and runs until killed.
"""
import asyncio
import os
import sys


class Turns:
    """Who spoke last on one connection, and the TURNS file (or None)."""
    count = 0

    def __init__(self, path):
        self.path, self.last = path, None
        Turns.count += 1
        self.number = Turns.count
        self.log("connect")

    def log(self, what):
        if self.path:
            with open(self.path, "a") as f:
                f.write("%s %d\n" % (what, self.number))

    def spoke(self, client):
        if client and self.last != "client":
            self.log("request")
        self.last = "client" if client else "server"


async def carry(reader, writer, delay, spoke=lambda: None):
    """Copies reader to writer, each chunk DELAY later than it came."""
    loop = asyncio.get_running_loop()
    queue = asyncio.Queue()

    async def deliver():
        while True:
            due, data = await queue.get()
            await asyncio.sleep(max(0.0, due - loop.time()))
            if not data:
                break
            writer.write(data)
            await writer.drain()
        writer.close()

    sender = asyncio.create_task(deliver())
    try:
        while True:
            data = await reader.read(1 << 16)
            if data:
                spoke()
            queue.put_nowait((loop.time() + delay, data))
            if not data:
                break
    except ConnectionError:
        queue.put_nowait((loop.time(), b""))
    try:
        await sender
    except ConnectionError:
        pass


async def main():
    portfile, port, target, delay_ms = sys.argv[1:5]
    turns_path = sys.argv[5] if len(sys.argv) > 5 else None
    host, _, target_port = target.rpartition(":")
    delay = int(delay_ms) / 1000.0

    async def serve(client_reader, client_writer):
        try:
            server_reader, server_writer = await asyncio.open_connection(host, int(target_port))
        except OSError:
            client_writer.close()
            return
        turns = Turns(turns_path)
        await asyncio.gather(carry(client_reader, server_writer, delay, lambda: turns.spoke(True)),
                             carry(server_reader, client_writer, delay, lambda: turns.spoke(False)))

    server = await asyncio.start_server(serve, "127.0.0.1", int(port))
    bound = server.sockets[0].getsockname()[1]
    with open(portfile + ".tmp", "w") as f:
        f.write("%d\n" % bound)
    os.rename(portfile + ".tmp", portfile)
    async with server:
        await server.serve_forever()


if __name__ == "__main__":
    asyncio.run(main())
