import { randomUUID } from 'node:crypto';
import { type BaseEvent, HttpAgent, type Message } from '@ag-ui/client';
import { AsyncGPTAPI, AsyncStreamingAgent } from 'lagent-ts';
import { afterEach, describe, expect, it } from 'vitest';
import { type GatedModel, startGatedModel } from '../../helpers/gated-model';
import { closeServers, serve, transcript } from './fixtures';

/*
 * AG-UI runs served from their logs, driven by `@ag-ui/client`'s `HttpAgent`. AG-UI defines no reconnect for its
 * HTTP transport (`HttpAgent` leaves `connect()` unimplemented; `transport.resumable` is a capability flag with
 * no request to go with it), so a client that lost its connection sends the same `RunAgentInput` again: its
 * `runId` names the run, which is answered from its log and never run twice. The model is a fake OpenAI server
 * whose reply goes on only when the test lets it.
 */

const opened: GatedModel[] = [];
afterEach(async () => {
  await closeServers();
  for (const model of opened.splice(0)) await model.close();
});

async function gated(pieces: string[]): Promise<GatedModel> {
  const model = await startGatedModel(() => ({ content: pieces }));
  opened.push(model);
  return model;
}

function writer(model: GatedModel) {
  return new AsyncStreamingAgent({
    llm: new AsyncGPTAPI({ model: 'gated', apiKey: 'k', baseURL: model.baseURL }),
    name: 'writer',
  });
}

const asked: Message = { id: 'u-1', role: 'user', content: 'tell a story' };

/** An HttpAgent on a thread (a page, opened again after a reload), and every event it receives. */
function client(url: string, threadId: string, headers?: Record<string, string>) {
  const agent = new HttpAgent({
    url: `${url}/ag-ui`,
    threadId,
    initialMessages: [structuredClone(asked)],
    ...(headers === undefined ? {} : { headers }),
  });
  const events: BaseEvent[] = [];
  const waiters: { match: (event: BaseEvent) => boolean; resolve: () => void }[] = [];
  const subscriber = {
    onEvent: ({ event }: { event: BaseEvent }) => {
      events.push(event);
      for (const waiter of waiters.filter((w) => w.match(event))) waiter.resolve();
    },
  };
  return {
    agent,
    events,
    run: (runId: string) => agent.runAgent({ runId }, subscriber),
    /** Resolves once an event matches. */
    seen: (match: (event: BaseEvent) => boolean) =>
      events.some(match)
        ? Promise.resolve()
        : new Promise<void>((resolve) => waiters.push({ match, resolve })),
  };
}

const types = (events: BaseEvent[]): string[] => events.map((event) => event.type);
const says = (text: string) => (event: BaseEvent) =>
  event.type === 'TEXT_MESSAGE_CONTENT' && (event as { delta?: string }).delta === text;

function lastText(messages: Message[]): string {
  return String(messages.filter((message) => message.role === 'assistant').at(-1)?.content ?? '');
}

describe('AG-UI: a RunAgentInput sent again is answered from its run', () => {
  it('a client that lost its connection gets the run from RUN_STARTED, live to the end; a second client too; one model request', async () => {
    const model = await gated(['Once ', 'upon ', 'a ', 'time.']);
    const agent = writer(model);
    const { url } = await serve({ agent });
    const runId = randomUUID();
    const first = client(url, 'story');
    const lost = first.run(runId).catch(() => undefined);
    await first.seen(says('Once '));
    // The connection drops (the page reloads): the run goes on without it.
    first.agent.abortRun();
    await lost;
    const request = await model.request(0);

    const back = client(url, 'story');
    const backRun = back.run(runId);
    await back.seen(says('Once '));
    const second = client(url, 'story');
    const secondRun = second.run(runId);
    await second.seen(says('Once '));
    request.release(3);
    const result = await backRun;
    await secondRun;
    expect(result.result).toBe('Once upon a time.');
    expect(lastText(back.agent.messages)).toBe('Once upon a time.');
    expect(types(back.events)).toEqual([
      'RUN_STARTED',
      'TEXT_MESSAGE_START',
      ...['Once ', 'upon ', 'a ', 'time.'].map(() => 'TEXT_MESSAGE_CONTENT'),
      'TEXT_MESSAGE_END',
      'RUN_FINISHED',
    ]);
    expect(back.events[0]).toMatchObject({ threadId: 'story', runId });
    // The same events, ids included, for every client.
    expect(second.events).toEqual(back.events);
    expect(model.requests).toHaveLength(1);
    expect(request.aborted).toBe(false);
    expect(transcript(agent, 'story')).toEqual(['tell a story', 'Once upon a time.']);

    // Sent once more after the end: the run as it was, nothing run again.
    const late = client(url, 'story');
    expect((await late.run(runId)).result).toBe('Once upon a time.');
    expect(late.events).toEqual(back.events);
    expect(model.requests).toHaveLength(1);
  });

  it('with abortOnDisconnect: true a client that leaves cancels the run: sent again, it ends with the cancelled outcome', async () => {
    const model = await gated(['Once ', 'upon ', 'a ', 'time.']);
    const agent = writer(model);
    const { url } = await serve({ agent, abortOnDisconnect: true });
    const runId = randomUUID();
    const first = client(url, 'gone');
    const lost = first.run(runId).catch(() => undefined);
    await first.seen(says('Once '));
    first.agent.abortRun();
    await lost;
    await (await model.request(0)).closed;
    const back = client(url, 'gone');
    await back.run(runId);
    expect(back.events.at(-1)).toMatchObject({ type: 'RUN_FINISHED', runId, outcome: { type: 'cancelled' } });
    expect(types(back.events)).toEqual([
      'RUN_STARTED',
      'TEXT_MESSAGE_START',
      'TEXT_MESSAGE_CONTENT',
      'TEXT_MESSAGE_END',
      'RUN_FINISHED',
    ]);
    expect(transcript(agent, 'gone')).toEqual([]);
  });

  it("a runId of another thread is refused (409); a session token reaches its own thread's runs only", async () => {
    const model = await gated(['Hello.']);
    const { server, url } = await serve({ agent: writer(model), token: 'secret' });
    const runId = randomUUID();
    const mine = client(url, 'alice', { authorization: `Bearer ${server.sessionToken('alice')}` });
    expect((await mine.run(runId)).result).toBe('Hello.');
    const post = (threadId: string, token: string) =>
      fetch(`${url}/ag-ui`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
        body: JSON.stringify({ threadId, runId, messages: [asked], tools: [], context: [], state: {} }),
      });
    const other = await post('bob', 'secret');
    expect(other.status).toBe(409);
    expect(await other.json()).toMatchObject({ error: 'RunIdTaken' });
    expect((await post('alice', server.sessionToken('bob'))).status).toBe(403);
    expect((await post('alice', 'wrong')).status).toBe(401);
    expect(model.requests).toHaveLength(1);
  });
});
