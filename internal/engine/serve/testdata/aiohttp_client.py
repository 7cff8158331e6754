#!/usr/bin/env python3
"""A streaming OpenAI-completions client in the style of vLLM's `bench serve`
(asyncio + aiohttp, a semaphore for the concurrency, time.perf_counter per
chunk), written for BENCHMARKS.md's generator-cost comparison with rigor's
internal/loadgen. Same definitions: TTFT is the first chunk that carries
text, ITL every gap between text chunks, latency ends at the last text chunk.

usage: aiohttp_client.py URL REQUESTS CONCURRENCY INPUT_WORDS OUTPUT_TOKENS

Prints one JSON object: completed, failed, duration, and every TTFT and ITL
in seconds, so the caller can set them against the server's schedule.
"""
import asyncio
import json
import sys
import time

import aiohttp


async def one(session, url, payload):
    start = time.perf_counter()
    ttft, last, itl = None, start, []
    async with session.post(url, json=payload) as resp:
        if resp.status != 200:
            return None
        async for line in resp.content:
            line = line.strip()
            if not line:
                continue
            data = line.decode("utf-8")
            if data.startswith("data: "):
                data = data[len("data: "):]
            if data == "[DONE]":
                continue
            choices = json.loads(data).get("choices")  # a last usage chunk has none
            if choices and choices[0].get("text"):
                now = time.perf_counter()
                if ttft is None:
                    ttft = now - start
                else:
                    itl.append(now - last)
                last = now
    return ttft, itl


async def main():
    url, n, conc, words, out = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
    payload = {"model": "m", "prompt": " ".join(["word"] * words), "max_tokens": out,
               "stream": True, "ignore_eos": True}
    sem = asyncio.Semaphore(conc)
    timeout = aiohttp.ClientTimeout(total=6 * 60 * 60)
    async with aiohttp.ClientSession(timeout=timeout, connector=aiohttp.TCPConnector(limit=0)) as session:
        async def limited():
            async with sem:
                return await one(session, url + "/v1/completions", payload)
        await asyncio.gather(*[limited() for _ in range(conc)])  # warm-up, not measured
        t0 = time.perf_counter()
        results = await asyncio.gather(*[limited() for _ in range(n)])
        duration = time.perf_counter() - t0
    ok = [r for r in results if r is not None and r[0] is not None]
    json.dump({"completed": len(ok), "failed": n - len(ok), "duration": duration,
               "ttft": [r[0] for r in ok], "itl": [g for r in ok for g in r[1]]}, sys.stdout)


asyncio.run(main())
