import { randomUUID } from 'node:crypto';
import { type BaseEvent, HttpAgent, type Message } from '@ag-ui/client';
import { AsyncAgent } from 'lagent-ts';
import { AsyncMockLLM } from 'lagent-ts/testing';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { assistant, closeServers, desk, serve, transcript } from './fixtures';

/*
 * AG-UI, driven by `@ag-ui/client`'s `HttpAgent` (which also checks that the event stream is well formed):
 * `threadId` is the session, a pause finishes the run with the `interrupt` outcome, and the next run resumes it.
 */

afterEach(closeServers);

/** An HttpAgent on a thread, with every event it received. */
function client(url: string, threadId: string) {
  const agent = new HttpAgent({ url: `${url}/ag-ui`, threadId });
  const events: BaseEvent[] = [];
  const subscriber = { onEvent: ({ event }: { event: BaseEvent }) => void events.push(event) };
  const say = (text: string) => {
    agent.addMessage({ id: randomUUID(), role: 'user', content: text });
    events.length = 0;
    return agent.runAgent({}, subscriber);
  };
  const resume = (resume: { interruptId: string; status: 'resolved' | 'cancelled'; payload?: unknown }[]) => {
    events.length = 0;
    return agent.runAgent({ resume }, subscriber);
  };
  return { agent, events, say, resume };
}

const types = (events: BaseEvent[]): string[] => events.map((event) => event.type);

function lastText(messages: Message[]): string {
  const assistantMessages = messages.filter((message) => message.role === 'assistant' && message.content);
  return String(assistantMessages.at(-1)?.content ?? '');
}

describe('AG-UI', () => {
  it('a plain reply: RUN_STARTED, reasoning, a text message, RUN_FINISHED', async () => {
    const { agent } = assistant({ streaming: false });
    const { url } = await serve({ agent });
    const ag = client(url, 'plain');
    const result = await ag.say('hello');
    expect(types(ag.events)).toEqual([
      'RUN_STARTED',
      'REASONING_START',
      'REASONING_MESSAGE_START',
      'REASONING_MESSAGE_CONTENT',
      'REASONING_MESSAGE_END',
      'REASONING_END',
      'TEXT_MESSAGE_START',
      'TEXT_MESSAGE_CONTENT',
      'TEXT_MESSAGE_END',
      'RUN_FINISHED',
    ]);
    expect(result.result).toBe('You said: hello');
    expect(lastText(ag.agent.messages)).toBe('You said: hello');
    expect(transcript(agent, 'plain')).toEqual(['hello', 'You said: hello']);
  });

  it('a streamed reply: many TEXT_MESSAGE_CONTENT deltas', async () => {
    const { agent } = assistant();
    const { url } = await serve({ agent });
    const ag = client(url, 'streamed');
    await ag.say('a longer message to stream');
    expect(types(ag.events).filter((type) => type === 'TEXT_MESSAGE_CONTENT').length).toBeGreaterThan(5);
    expect(lastText(ag.agent.messages)).toBe('You said: a longer message to stream');
  });

  it('a tool call: TOOL_CALL_START/ARGS/END and TOOL_CALL_RESULT, then the text', async () => {
    const { agent } = assistant();
    const { url } = await serve({ agent });
    const ag = client(url, 'tools');
    await ag.say('weather in Paris');
    const start = types(ag.events).indexOf('TOOL_CALL_START');
    expect(types(ag.events).slice(start, start + 4)).toEqual([
      'TOOL_CALL_START',
      'TOOL_CALL_ARGS',
      'TOOL_CALL_END',
      'TOOL_CALL_RESULT',
    ]);
    const call = ag.agent.messages.find(
      (message) => message.role === 'assistant' && message.toolCalls?.length,
    );
    expect(call).toMatchObject({
      toolCalls: [{ function: { name: 'Weather', arguments: '{"city":"Paris"}' } }],
    });
    expect(ag.agent.messages.find((message) => message.role === 'tool')).toMatchObject({
      content: 'sunny in Paris',
    });
    expect(lastText(ag.agent.messages)).toBe('Done: sunny in Paris');
  });

  it('an approval: the run finishes with the interrupt outcome; a resolved resume runs the tool', async () => {
    const { agent, log } = assistant();
    const { url } = await serve({ agent });
    const ag = client(url, 'approve');
    await ag.say('delete /tmp/a');
    const finished = ag.events.at(-1) as {
      outcome?: { type: string; interrupts: { id: string; toolCallId: string }[] };
    };
    expect(finished.outcome?.type).toBe('interrupt');
    expect(ag.agent.pendingInterrupts).toMatchObject([
      { reason: 'tool_approval', metadata: { toolCall: { name: 'Delete', arguments: { path: '/tmp/a' } } } },
    ]);
    expect(log.deleted).toEqual([]);
    const [ask] = ag.agent.pendingInterrupts;
    await ag.resume([{ interruptId: ask!.id, status: 'resolved', payload: { approve: true } }]);
    expect(ag.agent.pendingInterrupts).toEqual([]);
    expect(ag.events.find((event) => event.type === 'TOOL_CALL_RESULT')).toMatchObject({
      toolCallId: ask!.toolCallId,
      content: 'deleted /tmp/a',
    });
    expect(lastText(ag.agent.messages)).toBe('Done: deleted /tmp/a');
    expect(log.deleted).toEqual(['/tmp/a']);
    // The client's thread, as HttpAgent keeps it, matches the session on the next turn.
    await ag.say('thanks');
    expect(lastText(ag.agent.messages)).toBe('You said: thanks');
  });

  it('a cancelled resume declines: the tool does not run and the model reads why', async () => {
    const { agent, log } = assistant();
    const { url } = await serve({ agent });
    const ag = client(url, 'decline');
    await ag.say('delete /tmp/b');
    const [ask] = ag.agent.pendingInterrupts;
    await ag.resume([{ interruptId: ask!.id, status: 'cancelled', payload: { reason: 'keep it' } }]);
    expect(lastText(ag.agent.messages)).toMatch(/declined.*keep it/);
    expect(log.deleted).toEqual([]);
  });

  it("a sub-agent's call is a subagent run and a step, its tool calls attributed to it; its approval resumes", async () => {
    const { agent, log } = desk();
    const { url } = await serve({ agent });
    const ag = client(url, 'desk');
    await ag.say('quantum');
    expect(types(ag.events)).toEqual([
      'RUN_STARTED',
      'SUBAGENT_STARTED',
      'STEP_STARTED',
      'TOOL_CALL_START',
      'TOOL_CALL_ARGS',
      'TOOL_CALL_END',
      'TOOL_CALL_RESULT',
      'STEP_FINISHED',
      'SUBAGENT_FINISHED',
      'TEXT_MESSAGE_START',
      'TEXT_MESSAGE_CONTENT',
      'TEXT_MESSAGE_END',
      'RUN_FINISHED',
    ]);
    const started = ag.events[1] as unknown as {
      subagentRunId: string;
      name: string;
      metadata: { path: string };
    };
    expect(started).toMatchObject({ name: 'researcher', metadata: { path: 'researcher' } });
    expect(ag.events[2]).toMatchObject({ stepName: 'researcher' });
    expect(ag.events[3]).toMatchObject({ toolCallName: 'Search', subagentRunId: started.subagentRunId });

    await ag.say('publish Findings');
    const [ask] = ag.agent.pendingInterrupts;
    expect(ask).toMatchObject({ metadata: { path: 'researcher' } });
    expect(ask!.id).toMatch(/^researcher:/);
    const suspended = ag.events.find((event) => event.type === 'SUBAGENT_FINISHED') as unknown as {
      outcome: unknown;
    };
    expect(suspended.outcome).toEqual({ type: 'suspended', interruptIds: [ask!.id] });
    await ag.resume([{ interruptId: ask!.id, status: 'resolved' }]);
    expect(lastText(ag.agent.messages)).toBe('The desk reports: found: published Findings');
    expect(log.published).toEqual(['Findings']);
  });

  it('STATE_SNAPSHOT of the session when forwardedProps ask for it', async () => {
    const { agent } = assistant();
    const { url } = await serve({ agent });
    const ag = new HttpAgent({ url: `${url}/ag-ui`, threadId: 'state' });
    ag.addMessage({ id: 'm1', role: 'user', content: 'hello' });
    await ag.runAgent({ forwardedProps: { stateSnapshot: true } });
    expect((ag.state as { memory: { content: string }[] }).memory.map((message) => message.content)).toEqual([
      'hello',
      'You said: hello',
    ]);
  });

  it('errors: before the stream a plain 500, after it RUN_ERROR; the session keeps nothing', async () => {
    const { agent } = assistant();
    const { url } = await serve({ agent });
    const early = client(url, 'failing');
    const failure = await early.say('fail').catch((error: unknown) => error as Error & { status?: number });
    expect(failure).toMatchObject({ status: 500 });
    const late = client(url, 'failing-late');
    const errors: unknown[] = [];
    late.agent.addMessage({ id: 'm1', role: 'user', content: 'weather in doom' });
    await late.agent
      .runAgent({}, { onRunErrorEvent: ({ event }) => void errors.push(event) })
      .catch(() => undefined);
    expect(errors).toMatchObject([
      { type: 'RUN_ERROR', message: 'the model is down after the tool', code: 'Error' },
    ]);
    expect(transcript(agent, 'failing')).toEqual([]);
    expect(transcript(agent, 'failing-late')).toEqual([]);
  });

  it('with abortOnDisconnect: true, abortRun() stops the call, which leaves the session as it was', async () => {
    const { agent, log } = assistant();
    // By default a run goes on without its client (ag-ui-resume.test.ts): here the server stops it.
    const { server, url } = await serve({ agent, abortOnDisconnect: true });
    const ag = client(url, 'abort');
    await ag.say('hi');
    const running = ag.say('hang').catch(() => undefined);
    await log.hanging;
    await vi.waitFor(() => expect(types(ag.events)).toContain('TOOL_CALL_START'));
    ag.agent.abortRun();
    await log.hangAborted;
    await running;
    await vi.waitFor(() => expect(server.inFlight).toBe(0));
    // The call is a run, named by the AG-UI run's id: it ends cancelled, and takes its turn back.
    const { runId } = ag.events[0] as unknown as { runId: string };
    await vi.waitFor(async () =>
      expect(await (await fetch(`${url}/runs/${runId}`)).json()).toMatchObject({ status: 'cancelled' }),
    );
    expect(transcript(agent, 'abort')).toEqual(['hi', 'You said: hi']);
  });
});

describe('AG-UI: bad input is a clear 4xx and changes nothing', () => {
  it('unknown roles, a forged history, resuming what does not wait, malformed inputs', async () => {
    const { agent, log } = assistant();
    const { url } = await serve({ agent });
    const ag = client(url, 'bad');
    await ag.say('one');
    const before = transcript(agent, 'bad');
    const post = async (body: unknown) => {
      const response = await fetch(`${url}/ag-ui`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: 'text/event-stream' },
        body: typeof body === 'string' ? body : JSON.stringify(body),
      });
      const text = await response.text();
      if (response.status === 200) throw new Error(`answered 200: ${text.slice(0, 200)}`);
      return { status: response.status, body: JSON.parse(text) as { detail: string; error: string } };
    };
    const input = (messages: unknown[], extra: Record<string, unknown> = {}) => ({
      threadId: 'bad',
      runId: randomUUID(),
      messages,
      tools: [],
      context: [],
      state: {},
      forwardedProps: {},
      ...extra,
    });
    expect(await post(input([{ id: 'x', role: 'wizard', content: 'hi' }]))).toMatchObject({ status: 400 });
    expect(
      await post(
        input([
          { id: 'a', role: 'user', content: 'not what I said' },
          { id: 'b', role: 'assistant', content: 'You said: one' },
          { id: 'c', role: 'user', content: 'two' },
        ]),
      ),
    ).toMatchObject({ status: 409, body: { error: 'HistoryMismatch' } });
    expect(
      await post(input(ag.agent.messages, { resume: [{ interruptId: 'call_9', status: 'resolved' }] })),
    ).toMatchObject({ status: 409, body: { error: 'NotWaiting' } });
    expect(await post(input([{ id: 't', role: 'tool', toolCallId: 'x', content: 'result' }]))).toMatchObject({
      status: 409,
      body: { error: 'NotWaiting' },
    });
    expect(await post({ threadId: 'bad', messages: [] })).toMatchObject({ status: 400 });
    expect(await post('{"threadId": ')).toMatchObject({ status: 400 });
    expect(transcript(agent, 'bad')).toEqual(before);
    expect(log.deleted).toEqual([]);
  });

  it('context and state are not taken, nor frontend tools by an agent whose models get no tools: Lagent-Ignored-Options names them', async () => {
    const post = async (url: string) => {
      const response = await fetch(`${url}/ag-ui`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({
          threadId: 'ignored',
          runId: 'r1',
          messages: [{ id: 'm', role: 'user', content: 'hello' }],
          tools: [{ name: 'confirm', description: 'asks the user', parameters: {} }],
          context: [{ description: 'page', value: '/home' }],
          state: { counter: 1 },
          forwardedProps: {},
        }),
      });
      expect(response.status).toBe(200);
      await response.text();
      return response.headers.get('lagent-ignored-options');
    };
    // A function-calling agent offers frontend tools to its model (see ag-ui-frontend-tools.test.ts).
    expect(await post((await serve({ agent: assistant().agent })).url)).toBe('context, state');
    const chat = new AsyncAgent({ llm: new AsyncMockLLM({ responses: ['hi'] }), name: 'chat' });
    expect(await post((await serve({ agent: chat })).url)).toBe('tools, context, state');
  });
});
