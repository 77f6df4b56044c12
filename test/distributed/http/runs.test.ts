import {
  AgentMessage,
  AsyncAgent,
  AsyncFunctionCallingAgent,
  AsyncGPTAPI,
  AsyncStreamingAgent,
  asyncTool,
  interruptsOf,
  MemoryStore,
  resumeWith,
} from 'lagent-ts';
import { HTTPAgentServer } from 'lagent-ts/distributed';
import { AsyncMockLLM } from 'lagent-ts/testing';
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { type GatedModel, startGatedModel } from '../../helpers/gated-model';
import { openSSE, type SSEEvent } from '../../helpers/sse';

/** Runs over HTTP, against a real server and real clients; the model is a gated fake OpenAI server. */

const opened: { close(): Promise<unknown> }[] = [];
afterEach(async () => {
  for (const thing of opened.splice(0).reverse()) await thing.close();
});

async function serve(
  agent: ConstructorParameters<typeof HTTPAgentServer>[0]['agent'],
  options: Partial<ConstructorParameters<typeof HTTPAgentServer>[0]> = {},
): Promise<{ server: HTTPAgentServer; url: string }> {
  const server = new HTTPAgentServer({ agent, port: 0, onError: () => {}, ...options });
  opened.push({ close: () => server.close({ timeout: 2_000 }) });
  return { server, url: await server.listen() };
}

async function gated(pieces: string[]): Promise<GatedModel> {
  const model = await startGatedModel(() => ({ content: pieces }));
  opened.push(model);
  return model;
}

function writer(model: GatedModel, store = new MemoryStore()) {
  return new AsyncStreamingAgent({
    llm: new AsyncGPTAPI({ model: 'gated', apiKey: 'k', baseURL: model.baseURL }),
    name: 'writer',
    memory: { store },
  });
}

async function post(url: string, body: unknown, headers: Record<string, string> = {}) {
  const response = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify(body),
  });
  return { status: response.status, body: (await response.json().catch(() => undefined)) as any };
}

async function get(url: string, headers: Record<string, string> = {}) {
  const response = await fetch(url, { headers });
  return { status: response.status, body: (await response.json().catch(() => undefined)) as any };
}

/** Reads events until one matches. */
async function until(stream: { next(): Promise<SSEEvent | undefined> }, match: (e: SSEEvent) => boolean) {
  const seen: SSEEvent[] = [];
  for (let event = await stream.next(); event !== undefined; event = await stream.next()) {
    seen.push(event);
    if (match(event)) return seen;
  }
  throw new Error(`the stream ended without the event (saw ${seen.map((e) => e.event).join(', ')})`);
}

const text = (events: SSEEvent[]) => {
  let all = '';
  for (const event of events) {
    const content = JSON.parse(event.data).content;
    if (event.event === 'chunk') all = content;
    if (event.event === 'delta') all += content;
  }
  return all;
};

describe('runs over HTTP', () => {
  it('a client leaves mid-run and rejoins from its last event: nothing lost, nothing repeated; two clients see one sequence', async () => {
    const model = await gated(['Once ', 'upon ', 'a ', 'time.']);
    const { url } = await serve(writer(model));
    const started = await post(`${url}/runs`, { message: ['tell a story'], session_id: 'alice' });
    expect(started.status).toBe(202);
    const { runId, sessionId } = started.body;
    expect(sessionId).toBe('alice');
    const watcher = await openSSE(`${url}/runs/${runId}/stream`);
    const leaving = await openSSE(`${url}/runs/${runId}/stream`);
    expect(leaving.status).toBe(200);
    expect(leaving.headers.get('content-type')).toMatch(/text\/event-stream/);
    const request = await model.request(0);
    const before = await until(leaving, (e) => e.event === 'delta' || e.event === 'chunk');
    leaving.close();
    request.release(3);
    // The run goes on without the client that left; it rejoins from the last id it saw.
    const rejoined = await openSSE(`${url}/runs/${runId}/stream`, { 'last-event-id': before.at(-1)!.id! });
    const after = await rejoined.rest();
    const all = await watcher.rest();
    expect([...before, ...after]).toEqual(all);
    expect(all.map((e) => Number(e.id))).toEqual(all.map((_, i) => i + 1));
    expect(text(all)).toBe('Once upon a time.');
    expect(all.at(-1)!.event).toBe('message');
    const status = await get(`${url}/runs/${runId}`);
    expect(status.body).toMatchObject({ runId, sessionId: 'alice', status: 'done', lastEventId: all.length });
    expect(status.body.reply.content).toBe('Once upon a time.');
    // A run that ended, read to its end: 204 (an EventSource stops reconnecting); from the middle: the rest.
    expect((await openSSE(`${url}/runs/${runId}/stream?after=${all.length}`)).status).toBe(204);
    const tail = await (await openSSE(`${url}/runs/${runId}/stream?after=${all.length - 1}`)).rest();
    expect(tail).toEqual([all.at(-1)]);
    const runs = await get(`${url}/sessions/alice/runs`);
    expect(runs.body.runs).toEqual([expect.objectContaining({ runId, status: 'done' })]);
  });

  it('refuses bad input: unknown runs (404), negative or non-numeric after (400); an after past the end waits', async () => {
    const model = await gated(['a', 'b', 'c', 'd']);
    const { url } = await serve(writer(model));
    expect((await get(`${url}/runs/nope`)).status).toBe(404);
    expect((await openSSE(`${url}/runs/nope/stream`)).status).toBe(404);
    expect((await post(`${url}/runs/nope/cancel`, {})).status).toBe(404);
    expect((await post(`${url}/runs`, { session_id: 's' })).status).toBe(400);
    const { runId } = (await post(`${url}/runs`, { message: ['go'], session_id: 's' })).body;
    for (const query of ['after=-1', 'after=abc', 'after=1.5', 'after=']) {
      const refused = await fetch(`${url}/runs/${runId}/stream?${query}`);
      expect(refused.status).toBe(400);
      expect(((await refused.json()) as { error: string }).error).toBe('ValidationError');
    }
    const badHeader = await fetch(`${url}/runs/${runId}/stream`, { headers: { 'last-event-id': 'x' } });
    expect(badHeader.status).toBe(400);
    const request = await model.request(0);
    const early = await openSSE(`${url}/runs/${runId}/stream`);
    const first = await until(early, (e) => e.event === 'chunk' || e.event === 'delta');
    early.close();
    const at = Number(first.at(-1)!.id);
    // Two events past the end of the log so far: the stream waits for them, and starts after them.
    const ahead = await openSSE(`${url}/runs/${runId}/stream?after=${at + 2}`);
    expect(ahead.status).toBe(200);
    request.release(3);
    const rest = await ahead.rest();
    expect(Number(rest[0]!.id)).toBe(at + 3);
    expect(rest.at(-1)!.event).toBe('message');
  });

  it('cancel stops the model request, and the run ends cancelled', async () => {
    const model = await gated(['never ', 'ending ', 'story']);
    const { url } = await serve(writer(model));
    const { runId } = (await post(`${url}/runs`, { message: ['go'], session_id: 's' })).body;
    const request = await model.request(0);
    await request.sentAtLeast(1);
    const cancelled = await post(`${url}/runs/${runId}/cancel`, {});
    expect([200, 202]).toContain(cancelled.status);
    await request.closed;
    expect(request.aborted).toBe(true);
    const events = await (await openSSE(`${url}/runs/${runId}/stream`)).rest();
    expect(events.at(-1)).toMatchObject({ event: 'error' });
    expect(JSON.parse(events.at(-1)!.data)).toMatchObject({ status: 'cancelled' });
    expect((await get(`${url}/runs/${runId}`)).body.status).toBe('cancelled');
    expect((await get(`${url}/memory/s`)).body.memory).toEqual([]);
  });

  it('an approval pause in a background run is answered through POST /runs with the resume message, and the run goes on', async () => {
    const sent: string[] = [];
    const store = new MemoryStore();
    const agent = new AsyncFunctionCallingAgent({
      llm: new AsyncMockLLM({
        responses: [{ toolCalls: [{ name: 'Send', arguments: { to: 'bob' } }] }, 'Sent to bob.'],
      }),
      actions: [
        asyncTool({
          name: 'Send',
          parameters: z.object({ to: z.string() }),
          needsApproval: true,
          run: async ({ to }) => {
            sent.push(to);
            return `sent to ${to}`;
          },
        }),
      ],
      name: 'mailer',
      durable: { store },
      memory: { store },
    });
    const { url } = await serve(agent);
    const { runId } = (await post(`${url}/runs`, { message: ['mail bob'], session_id: 's' })).body;
    const paused = await (await openSSE(`${url}/runs/${runId}/stream`)).rest();
    const last = JSON.parse(paused.at(-1)!.data);
    expect(last.type).toBe('interrupt');
    const status = await get(`${url}/runs/${runId}`);
    expect(status.body.status).toBe('waiting');
    const [interrupt] = interruptsOf(AgentMessage.from(status.body.reply));
    const resume = resumeWith([{ id: interrupt!.id, approve: true }]).toJSON({ format: 'lagent' });
    const resumed = await post(`${url}/runs`, { message: [resume], session_id: 's' });
    expect(resumed.status).toBe(202);
    expect(resumed.body.runId).toBe(runId);
    const rest = await (await openSSE(`${url}/runs/${runId}/stream?after=${paused.length}`)).rest();
    expect(JSON.parse(rest[0]!.data)).toMatchObject({ status: 'running', resumed: true });
    expect(JSON.parse(rest.at(-1)!.data).content).toBe('Sent to bob.');
    expect(sent).toEqual(['bob']);
    expect((await get(`${url}/runs/${runId}`)).body.status).toBe('done');
  });

  it('POST /runs with an Idempotency-Key starts one run, whatever the retries', async () => {
    const store = new MemoryStore();
    const agent = new AsyncAgent({
      llm: new AsyncMockLLM({ responses: () => 'ok' }),
      name: 'd',
      durable: { store },
      memory: { store },
    });
    const { url } = await serve(agent);
    const headers = { 'idempotency-key': 'run-1' };
    const first = await post(`${url}/runs`, { message: ['hi'], session_id: 's' }, headers);
    expect(first.body.runId).toBe('run-1');
    await (await openSSE(`${url}/runs/run-1/stream`)).rest();
    const again = await post(`${url}/runs`, { message: ['hi'], session_id: 's' }, headers);
    expect(again).toEqual({ status: 200, body: { runId: 'run-1', sessionId: 's' } });
    expect((await get(`${url}/memory/s`)).body.memory).toHaveLength(2);
    const elsewhere = await post(`${url}/runs`, { message: ['hi'], session_id: 'other' }, headers);
    expect(elsewhere.status).toBe(422);
  });

  it("session tokens: a run of another session is refused, the session's own are served", async () => {
    const model = await gated(['ok']);
    const { server, url } = await serve(writer(model), { token: 'secret' });
    const admin = { authorization: 'Bearer secret' };
    const alice = { authorization: `Bearer ${server.sessionToken('alice')}` };
    const aliceRun = (await post(`${url}/runs`, { message: ['hi'], session_id: 'alice' }, alice)).body.runId;
    const bobRun = (await post(`${url}/runs`, { message: ['hi'], session_id: 'bob' }, admin)).body.runId;
    expect(typeof aliceRun).toBe('string');
    expect((await get(`${url}/runs/${aliceRun}`, alice)).status).toBe(200);
    expect((await openSSE(`${url}/runs/${aliceRun}/stream`, alice)).status).toBe(200);
    expect((await get(`${url}/runs/${bobRun}`, alice)).status).toBe(403);
    expect((await openSSE(`${url}/runs/${bobRun}/stream`, alice)).status).toBe(403);
    expect((await post(`${url}/runs/${bobRun}/cancel`, {}, alice)).status).toBe(403);
    expect((await get(`${url}/sessions/bob/runs`, alice)).status).toBe(403);
    expect((await get(`${url}/sessions/alice/runs`, alice)).status).toBe(200);
    expect((await post(`${url}/runs`, { message: ['hi'], session_id: 'bob' }, alice)).status).toBe(403);
    expect((await get(`${url}/memory/bob`, alice)).status).toBe(403);
    expect((await post(`${url}/chat_completion`, { message: ['hi'], session_id: 'bob' }, alice)).status).toBe(
      403,
    );
    // A forged or expired token is no token; the admin token reaches every session.
    const forged = { authorization: `Bearer ${server.sessionToken('alice').slice(0, -2)}xx` };
    expect((await get(`${url}/runs/${aliceRun}`, forged)).status).toBe(401);
    expect((await get(`${url}/runs/${bobRun}`, admin)).status).toBe(200);
    expect(() => server.sessionToken('alice', { ttlMs: 0 })).toThrow(/ttlMs/);
    for (const request of model.requests) request.release(10);
  });

  it('abortOnDisconnect: a durable call outlives a client that leaves /chat_completion/stream; with true, it stops', async () => {
    for (const abortOnDisconnect of [undefined, true]) {
      const model = await gated(['one ', 'two ', 'three']);
      const store = new MemoryStore();
      const agent = new AsyncStreamingAgent({
        llm: new AsyncGPTAPI({ model: 'gated', apiKey: 'k', baseURL: model.baseURL }),
        name: 'durable-writer',
        durable: { store },
        memory: { store },
      });
      const { server, url } = await serve(
        agent,
        abortOnDisconnect === undefined ? {} : { abortOnDisconnect },
      );
      const controller = new AbortController();
      const response = await fetch(`${url}/chat_completion/stream`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'idempotency-key': 'call-1' },
        body: JSON.stringify({ message: ['go'], session_id: 's' }),
        signal: controller.signal,
      });
      const reader = response.body!.getReader();
      await reader.read();
      const request = await model.request(0);
      controller.abort();
      await reader.cancel().catch(() => {});
      if (abortOnDisconnect === true) {
        await request.closed;
        expect(request.aborted).toBe(true);
        expect((await get(`${url}/memory/s`)).body.memory).toEqual([]);
      } else {
        request.release(5);
        // The call goes on to its end, with nobody to send it to: its reply is in the journal and the memory.
        await server.close();
        expect(request.aborted).toBe(false);
        expect(store.readJournal('durable-writer', 'call-1')?.finished).toBe(true);
        expect(store.readSession('durable-writer', 's')?.state.memory?.at(-1)?.content).toBe('one two three');
      }
    }
  });
});
