import asyncio, sys, hashlib, os, random
port = int(sys.argv[2])
async def handle(r, w):
    while True:
        b = await r.read(65536)
        if not b: break
        w.write(b); await w.drain()
    w.close()
async def server():
    s = await asyncio.start_server(handle, '127.0.0.1', port)
    print("listening", flush=True)
    async with s: await s.serve_forever()
async def one(i):
    r, w = await asyncio.open_connection('127.0.0.1', port)
    rnd = random.Random(i); total = 0; h1 = hashlib.sha256(); h2 = hashlib.sha256()
    for _ in range(20):
        b = rnd.randbytes(rnd.randint(1, 20000)); h1.update(b); w.write(b); await w.drain(); total += len(b)
        got = 0
        while got < len(b):
            d = await r.read(65536); h2.update(d); got += len(d)
    w.write_eof()
    rest = await r.read()
    w.close()
    return h1.hexdigest() == h2.hexdigest() and rest == b''
async def client():
    res = await asyncio.gather(*[one(i) for i in range(200)])
    print("ok" if all(res) else "MISMATCH", sum(res), flush=True)
if sys.argv[1] == 'server': asyncio.run(server())
else: asyncio.run(client())
