import { TimeoutError } from 'lagent-ts';
import { HTTPAgentClient, HTTPAgentError } from 'lagent-ts/distributed';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Child, startChild } from './processes';

/**
 * The sync client's limits (it blocks its thread, so the misbehaving server runs in a child process): an
 * oversized answer and a stream that goes silent after its headers fail as on the async client.
 */
const SERVER = `
const http = require('node:http');
const big = JSON.stringify({ content: 'x'.repeat(3000000), sender: 'hostile' });
const server = http.createServer((request, response) => {
  request.resume();
  if (request.url === '/chat_completion/stream') {
    response.writeHead(200, { 'content-type': 'text/event-stream' });
    response.flushHeaders();
    return;
  }
  response.writeHead(200, { 'content-type': 'application/json' });
  response.end(big);
});
server.listen(0, '127.0.0.1', () => console.log('ready ' + server.address().port));
process.stdin.on('end', () => process.exit(0));
process.stdin.resume();
`;

describe('HTTPAgentClient (sync): limits', () => {
  let child: Child;
  let url: string;

  beforeAll(async () => {
    child = await startChild(process.execPath, ['-e', SERVER], /^ready \d+/);
    url = `http://127.0.0.1:${child.line.split(' ')[1]}`;
  });
  afterAll(() => child?.stop());

  it('maxResponseBytes and the first-event timeout cross the bridge', () => {
    const remote = new HTTPAgentClient({ url, maxResponseBytes: 1_000_000, timeout: 300 });
    try {
      expect(() => remote.call('hi')).toThrow(HTTPAgentError);
      expect(() => remote.call('hi')).toThrow(/maxResponseBytes/);
      expect(() => [...remote.stream('hi')]).toThrow(TimeoutError);
    } finally {
      remote.close();
    }
  });
});
