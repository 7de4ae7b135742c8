#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
# tests/faults/delay_proxy.py - a TCP proxy that delays every chunk by a
# fixed time in each direction, for f_4 (a slow store).  It exists because
# this machine's kernel has no netem (tc qdisc ... netem delay): nft can drop
# packets but not hold them, so latency is added in user space here.
#
# usage: delay_proxy.py LISTEN_ADDR LISTEN_PORT TARGET_ADDR TARGET_PORT DELAY_MS
# It starts with no delay (the gateways open the store and the supervisors
# attach at full speed); SIGUSR1 turns the delay on (the fault), SIGUSR2
# off again, for the chunks read from then on.  With the delay on, each
# chunk read is written DELAY_MS later, in order (a queue per direction,
# so latency is added without limiting throughput).
# Prints "listening" once it accepts connections.
import asyncio
import signal
import sys

DELAY = float(sys.argv[5]) / 1000.0
delay = 0.0


async def pump(reader, writer):
    loop = asyncio.get_running_loop()
    queue = asyncio.Queue()

    async def read():
        while True:
            data = await reader.read(65536)
            await queue.put((loop.time() + delay, data))
            if not data:
                return

    async def write():
        while True:
            due, data = await queue.get()
            wait = due - loop.time()
            if wait > 0:
                await asyncio.sleep(wait)
            if not data:
                break
            writer.write(data)
            await writer.drain()
        writer.close()

    try:
        await asyncio.gather(read(), write())
    except (ConnectionError, OSError):
        writer.close()


async def handle(creader, cwriter):
    try:
        sreader, swriter = await asyncio.open_connection(sys.argv[3], int(sys.argv[4]))
    except OSError:
        cwriter.close()
        return
    await asyncio.gather(pump(creader, swriter), pump(sreader, cwriter), return_exceptions=True)


def set_delay(d):
    global delay
    delay = d
    print(f"delay {int(d * 1000)} ms", flush=True)


async def main():
    loop = asyncio.get_running_loop()
    loop.add_signal_handler(signal.SIGUSR1, set_delay, DELAY)
    loop.add_signal_handler(signal.SIGUSR2, set_delay, 0.0)
    server = await asyncio.start_server(handle, sys.argv[1], int(sys.argv[2]))
    print("listening", flush=True)
    async with server:
        await server.serve_forever()


asyncio.run(main())
