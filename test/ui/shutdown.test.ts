import { once } from 'node:events';
import http from 'node:http';
import { connect, type Socket } from 'node:net';
import { afterAll, describe, expect, it } from 'vitest';
import { ensureBuilt, type RunningUi, startUi } from './browser';

/**
 * `lagent ui` ends on SIGTERM while clients still hold connections to it, as a browser does: a spare
 * connection it opened ahead and never used, an event stream, an idle keep-alive connection. Each used to
 * hold the process until the client hung up (the test's SIGKILL 10 s later): Node's `server.close()` ends
 * only the connections idle at that moment, and a closed server no longer times out one that sent nothing.
 */

const TOKEN = 'shutdown-test-token';

/** A TCP connection to the server and a promise of its end (the server hanging up). */
async function rawConnection(base: string): Promise<{ socket: Socket; closed: Promise<unknown> }> {
  const socket = connect(Number(new URL(base).port), '127.0.0.1');
  socket.on('error', () => undefined);
  await once(socket, 'connect');
  return { socket, closed: once(socket, 'close') };
}

describe('lagent ui on SIGTERM', () => {
  let ui: RunningUi | undefined;

  afterAll(async () => {
    // Only when a check failed before the signal was sent.
    if (ui) await ui.cli.stop('SIGKILL');
  });

  it('exits with 0 while a spare connection, an event stream and a keep-alive connection are open', async () => {
    ensureBuilt();
    ui = await startUi(TOKEN);
    const { base } = ui;
    const auth = { authorization: `Bearer ${TOKEN}` };

    // A connection that never sends a request (browsers and client pools open spare ones).
    const spare = await rawConnection(base);

    // The page's event stream, with its first bytes received.
    const events = await rawConnection(base);
    events.socket.write(
      `GET /ui/events HTTP/1.1\r\nHost: ${new URL(base).host}\r\nAuthorization: ${auth.authorization}\r\n\r\n`,
    );
    await once(events.socket, 'data');

    // A keep-alive connection left idle after its answer.
    const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
    const idle = await new Promise<Socket>((resolve, reject) => {
      const request = http.get(`${base}/ui/info`, { agent, headers: auth }, (response) => {
        expect(response.statusCode).toBe(200);
        response.resume();
        response.once('end', () => resolve(request.socket as Socket));
      });
      request.on('error', reject);
    });
    const idleClosed = once(idle, 'close');

    // No SIGKILL behind it: a process that does not end fails the test by its timeout.
    const cli = ui.cli;
    const exited = once(cli.child, 'exit') as Promise<[number | null, NodeJS.Signals | null]>;
    cli.child.kill('SIGTERM');
    const [code, signal] = await exited;
    ui = undefined;
    expect({ code, signal }).toEqual({ code: 0, signal: null });
    expect(cli.output().stderr).toMatch(/lagent ui: SIGTERM, shutting down/);
    await Promise.all([spare.closed, events.closed, idleClosed]);
    agent.destroy();
  });
});
