import { Readable } from 'node:stream';
import { constants, createBrotliCompress, gzipSync } from 'node:zlib';
import { afterEach, describe, expect, it } from 'vitest';
import { safeFetch } from '#src/tools/web/http';
import { type FakeHttpServer, startFakeHttp } from '../../helpers/http-server';

let servers: FakeHttpServer[] = [];

afterEach(async () => {
  await Promise.all(servers.map((server) => server.close()));
  servers = [];
});

/** A server answering every request with `body`, compressed as `encoding`. */
async function serveEncoded(body: Buffer, encoding: string): Promise<FakeHttpServer> {
  const server = await startFakeHttp((_request, response) => {
    response.writeHead(200, { 'content-type': 'text/plain; charset=utf-8', 'content-encoding': encoding });
    response.end(body);
  });
  servers.push(server);
  return server;
}

/** `megabytes` MiB of zeros, brotli-compressed at a quality that packs them into a couple of KiB. */
async function brotliBomb(megabytes: number): Promise<Buffer> {
  const compress = createBrotliCompress({
    params: {
      [constants.BROTLI_PARAM_QUALITY]: 4,
      [constants.BROTLI_PARAM_SIZE_HINT]: megabytes * 1024 * 1024,
    },
  });
  const zeros = Buffer.alloc(1024 * 1024);
  const source = Readable.from(
    (function* () {
      for (let index = 0; index < megabytes; index++) yield zeros;
    })(),
  );
  const chunks: Buffer[] = [];
  compress.on('data', (chunk: Buffer) => chunks.push(chunk));
  const done = new Promise((resolve) => compress.on('end', resolve));
  source.pipe(compress);
  await done;
  return Buffer.concat(chunks);
}

/** Milliseconds of CPU (every thread of the process, zlib's included) used during the next `ms`. */
async function cpuDuring(ms: number): Promise<number> {
  const start = process.cpuUsage();
  await new Promise((resolve) => setTimeout(resolve, ms));
  const used = process.cpuUsage(start);
  return (used.user + used.system) / 1000;
}

describe('a decompressed body at the size cap', () => {
  it('stops decompressing once the cap is reached (a brotli bomb costs no CPU after the answer)', async () => {
    const bomb = await brotliBomb(512);
    expect(bomb.length).toBeLessThan(64 * 1024);
    const server = await serveEncoded(bomb, 'br');
    const outcome = await safeFetch(server.url, { allowPrivateNetwork: true, maxBytes: 50_000 });
    expect(outcome.ok).toBe(true);
    if (!outcome.ok) return;
    expect(outcome.data.text.length).toBe(50_000);
    expect(outcome.data.truncated).toBe(true);
    // Unstopped, the decompressor goes on through the other 511.9 MiB for seconds, at full speed.
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(await cpuDuring(1500)).toBeLessThan(150);
  });

  it('reports truncated: true when the cap falls exactly on a chunk boundary', async () => {
    // zlib hands out 16 KiB chunks: a 16 KiB cap is filled exactly by the first one.
    const text = 'abcdefgh'.repeat(8 * 1024); // 64 KiB
    const server = await serveEncoded(gzipSync(text), 'gzip');
    const cut = await safeFetch(server.url, { allowPrivateNetwork: true, maxBytes: 16 * 1024 });
    expect(cut.ok && cut.data).toEqual({
      contentType: 'text/plain',
      text: text.slice(0, 16 * 1024),
      truncated: true,
    });
    // A body exactly as long as the cap is whole.
    const whole = await safeFetch(server.url, { allowPrivateNetwork: true, maxBytes: 64 * 1024 });
    expect(whole.ok && whole.data).toEqual({ contentType: 'text/plain', text, truncated: false });
  });

  it('reports truncated: true for an uncompressed body cut exactly where a chunk ends', async () => {
    const server = await startFakeHttp(async (_request, response) => {
      response.writeHead(200, { 'content-type': 'text/plain' });
      response.write('x'.repeat(1000));
      await new Promise((resolve) => setTimeout(resolve, 50));
      response.end('y'.repeat(1000));
    });
    servers.push(server);
    const cut = await safeFetch(server.url, { allowPrivateNetwork: true, maxBytes: 1000 });
    expect(cut.ok && cut.data).toEqual({
      contentType: 'text/plain',
      text: 'x'.repeat(1000),
      truncated: true,
    });
  });
});
