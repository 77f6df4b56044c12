import { randomUUID } from 'node:crypto';
import { type Message, type Part, Role, type StreamResponse, type Task, TaskState } from '@a2a-js/sdk';
import {
  type Client,
  ClientFactory,
  ClientFactoryOptions,
  DefaultAgentCardResolver,
  JsonRpcTransportFactory,
} from '@a2a-js/sdk/client';
import {
  type AgentMessage,
  AsyncAgent,
  BudgetExceededError,
  type ForwardOptions,
  interruptsOf,
  resumeWith,
} from 'lagent-ts';
import { AsyncA2AAgent, HTTPAgentError } from 'lagent-ts/distributed';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { assistant, closeServers, desk, serve, transcript } from './fixtures';

/*
 * A2A 1.0 both ways: `@a2a-js/sdk`'s own client against an HTTPAgentServer (the card, SendMessage,
 * SendStreamingMessage, GetTask, CancelTask, and their 0.3 names), and AsyncA2AAgent calling an A2A agent as a
 * sub-agent (its input-required task an interrupt of the local tree).
 */

afterEach(closeServers);

async function sdkClient(url: string, token?: string): Promise<Client> {
  const fetchImpl: typeof fetch = (input, init) => {
    const headers = new Headers(init?.headers);
    if (token !== undefined) headers.set('authorization', `Bearer ${token}`);
    return fetch(input, { ...init, headers });
  };
  const factory = new ClientFactory(
    ClientFactoryOptions.createFrom(ClientFactoryOptions.default, {
      transports: [new JsonRpcTransportFactory({ fetchImpl })],
      cardResolver: new DefaultAgentCardResolver({ fetchImpl }),
    }),
  );
  return factory.createFromUrl(url);
}

function text(value: string): Part {
  return { content: { $case: 'text', value }, metadata: undefined, filename: '', mediaType: 'text/plain' };
}

function data(value: unknown): Part {
  return {
    content: { $case: 'data', value },
    metadata: undefined,
    filename: '',
    mediaType: 'application/json',
  };
}

function message(contextId: string, parts: Part[], taskId = ''): Message {
  return {
    messageId: randomUUID(),
    contextId,
    taskId,
    role: Role.ROLE_USER,
    parts,
    metadata: undefined,
    extensions: [],
    referenceTaskIds: [],
  };
}

const request = (sent: Message, metadata?: Record<string, unknown>) =>
  ({ tenant: '', message: sent, configuration: undefined, metadata }) as never;

function artifactText(task: Task): string {
  return task.artifacts
    .flatMap((artifact) => artifact.parts)
    .map((part) => (part.content?.$case === 'text' ? part.content.value : ''))
    .join('');
}

function textOfParts(parts: readonly Part[] | undefined): string {
  return (parts ?? []).map((part) => (part.content?.$case === 'text' ? part.content.value : '')).join('');
}

function dataParts(parts: readonly Part[] | undefined): Record<string, unknown>[] {
  return (parts ?? []).flatMap((part) => (part.content?.$case === 'data' ? [part.content.value] : []));
}

async function send(client: Client, sent: Message, metadata?: Record<string, unknown>): Promise<Task> {
  return (await client.sendMessage(request(sent, metadata))) as Task;
}

async function collect(client: Client, sent: Message): Promise<StreamResponse[]> {
  const events: StreamResponse[] = [];
  for await (const event of client.sendMessageStream(request(sent))) events.push(event);
  return events;
}

describe('A2A server: the SDK client against HTTPAgentServer', () => {
  it('the agent card: name, skills from the agent and its tools, streaming, the bearer scheme', async () => {
    const { agent } = assistant();
    const { url } = await serve({ agent, token: 'secret' });
    const client = await sdkClient(url, 'secret');
    const card = await client.getAgentCard();
    expect(card.name).toBe('assistant');
    expect(card.description).toBe('An assistant with tools');
    expect(card.capabilities?.streaming).toBe(true);
    expect(card.skills.map((skill) => skill.id)).toEqual(['assistant', 'Weather', 'Delete', 'Hang']);
    expect(card.supportedInterfaces[0]).toMatchObject({ url: `${url}/a2a`, protocolBinding: 'JSONRPC' });
    expect(Object.keys(card.securitySchemes)).toEqual(['bearer']);
    // The card is public; the JSON-RPC endpoint is not.
    const anonymous = await sdkClient(url);
    const refused = await anonymous
      .sendMessage(request(message('s', [text('hello')])))
      .catch((error: unknown) => error as Error);
    expect((refused as Error).message).toMatch(/401/);
  });

  it('a plain reply: the task completes with the reply as its artifact; GetTask reads it back', async () => {
    const { agent } = assistant({ streaming: false });
    const { url } = await serve({ agent });
    const client = await sdkClient(url);
    const task = await send(client, message('plain', [text('hello')]));
    expect(task.contextId).toBe('plain');
    expect(task.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
    expect(artifactText(task)).toBe('You said: hello');
    const again = await client.getTask({ tenant: '', id: task.id, historyLength: undefined } as never);
    expect(again.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
    expect(transcript(agent, 'plain')).toEqual(['hello', 'You said: hello']);
  });

  it('a streamed reply: artifact updates append as the text grows', async () => {
    const { agent } = assistant();
    const { url } = await serve({ agent });
    const client = await sdkClient(url);
    const events = await collect(client, message('streamed', [text('a longer message to stream')]));
    const updates = events.filter((event) => event.payload?.$case === 'artifactUpdate');
    expect(updates.length).toBeGreaterThan(5);
    const streamed = updates
      .map((event) => (event.payload?.$case === 'artifactUpdate' ? event.payload.value : undefined))
      .map((update) => textOfParts(update?.artifact?.parts))
      .join('');
    expect(streamed).toBe('You said: a longer message to stream');
    const last = events.at(-1)!.payload;
    expect(last?.$case === 'statusUpdate' && last.value.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
  });

  it('a tool call and a sub-agent: working status messages carry their progress as data parts', async () => {
    const { agent } = assistant();
    const { url } = await serve({ agent });
    const client = await sdkClient(url);
    const events = await collect(client, message('tools', [text('weather in Paris')]));
    const progress = events.flatMap((event) =>
      event.payload?.$case === 'statusUpdate' ? dataParts(event.payload.value.status?.message?.parts) : [],
    );
    expect(progress.map((item) => `${item.event} ${item.path}`)).toEqual(['toolStart ', 'toolEnd ']);
    expect(progress[1]).toMatchObject({
      toolCalls: [{ name: 'Weather' }],
      results: [{ text: 'sunny in Paris' }],
    });

    const { agent: deskAgent } = desk();
    const second = await serve({ agent: deskAgent });
    const deskClient = await sdkClient(second.url);
    const deskEvents = await collect(deskClient, message('desk', [text('quantum')]));
    const deskProgress = deskEvents.flatMap((event) =>
      event.payload?.$case === 'statusUpdate' ? dataParts(event.payload.value.status?.message?.parts) : [],
    );
    expect(deskProgress.map((item) => `${item.event} ${item.path}`)).toEqual([
      'agentStart researcher',
      'toolStart researcher',
      'toolEnd researcher',
      'agentEnd researcher',
    ]);
  });

  it('an approval: the task is input-required with the call as a data part; a message on the task approves it', async () => {
    const { agent, log } = assistant();
    const { url } = await serve({ agent });
    const client = await sdkClient(url);
    const paused = await send(client, message('approve', [text('delete /tmp/a')]));
    expect(paused.status?.state).toBe(TaskState.TASK_STATE_INPUT_REQUIRED);
    const [asked] = dataParts(paused.status?.message?.parts);
    const ask = (asked as { interrupt: { id: string; toolCall: unknown } }).interrupt;
    expect(ask.toolCall).toMatchObject({ name: 'Delete', arguments: { path: '/tmp/a' } });
    expect(log.deleted).toEqual([]);
    const done = await send(
      client,
      message('approve', [data({ decisions: [{ id: ask.id, approve: true }] })], paused.id),
    );
    expect(done.id).toBe(paused.id);
    expect(done.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
    expect(artifactText(done)).toContain('Done: deleted /tmp/a');
    expect(log.deleted).toEqual(['/tmp/a']);
  });

  it("a sub-agent's approval: input-required with its call at the sub-agent's path; a message on the task approves it", async () => {
    const { agent, log } = desk();
    const { url } = await serve({ agent });
    const client = await sdkClient(url);
    const events = await collect(client, message('desk-publish', [text('publish Findings')]));
    const last = events.at(-1)!.payload;
    expect(last?.$case === 'statusUpdate' && last.value.status?.state).toBe(
      TaskState.TASK_STATE_INPUT_REQUIRED,
    );
    const status = last?.$case === 'statusUpdate' ? last.value : undefined;
    const ask = (dataParts(status?.status?.message?.parts)[0] as { interrupt: Record<string, unknown> })
      .interrupt;
    expect(ask).toMatchObject({
      path: 'researcher',
      toolCall: { name: 'Publish', arguments: { title: 'Findings' } },
    });
    expect(log.published).toEqual([]);
    const done = await send(
      client,
      message('desk-publish', [data({ decisions: [{ id: ask.id, approve: true }] })], status!.taskId),
    );
    expect(done.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
    expect(artifactText(done)).toBe('The desk reports: found: published Findings');
    expect(log.published).toEqual(['Findings']);
  });

  it('a declined approval: the tool does not run and the model reads why', async () => {
    const { agent, log } = assistant();
    const { url } = await serve({ agent });
    const client = await sdkClient(url);
    const paused = await send(client, message('decline', [text('delete /tmp/b')]));
    const ask = (dataParts(paused.status?.message?.parts)[0] as { interrupt: { id: string } }).interrupt;
    const done = await send(
      client,
      message(
        'decline',
        [data({ decisions: [{ id: ask.id, approve: false, reason: 'keep it' }] })],
        paused.id,
      ),
    );
    expect(artifactText(done)).toMatch(/declined.*keep it/);
    expect(log.deleted).toEqual([]);
  });

  it('a failing agent: the task fails with its message; the session keeps nothing', async () => {
    const { agent } = assistant();
    const { url } = await serve({ agent });
    const client = await sdkClient(url);
    const task = await send(client, message('failing', [text('fail')]));
    expect(task.status?.state).toBe(TaskState.TASK_STATE_FAILED);
    expect(textOfParts(task.status?.message?.parts)).toBe('the model is down');
    expect(transcript(agent, 'failing')).toEqual([]);
  });

  it('CancelTask stops a running call, which leaves the session as it was', async () => {
    const { agent, log } = assistant();
    const { server, url } = await serve({ agent });
    const client = await sdkClient(url);
    await send(client, message('cancel', [text('hi')]));
    const events = client.sendMessageStream(request(message('cancel', [text('hang')])));
    const first = await events.next();
    const taskId = first.value?.payload?.$case === 'task' ? first.value.payload.value.id : '';
    await log.hanging;
    const cancelled = await client.cancelTask({ tenant: '', id: taskId } as never);
    await log.hangAborted;
    expect(cancelled.status?.state).toBe(TaskState.TASK_STATE_CANCELED);
    for await (const _ of events);
    await vi.waitFor(() => expect(server.inFlight).toBe(0));
    expect(transcript(agent, 'cancel')).toEqual(['hi', 'You said: hi']);
  });

  it('bad input: decisions for nothing waiting, a malformed body, A2A 0.3 method names still served', async () => {
    const { agent, log } = assistant();
    const { url } = await serve({ agent });
    const client = await sdkClient(url);
    await send(client, message('bad', [text('one')]));
    const before = transcript(agent, 'bad');
    const refused = await client
      .sendMessage(request(message('bad', [data({ decisions: [{ id: 'call_9', approve: true }] })])))
      .catch((error: unknown) => error as Error);
    expect((refused as Error).message).toMatch(/"call_9" is not waiting|waits for no decision/);
    const malformed = await fetch(`${url}/a2a`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'a2a-version': '1.0' },
      body: '{"jsonrpc": "2.0", ',
    });
    expect(malformed.status).toBe(400);
    // A 0.3 client (no A2A-Version header, 0.3 method and part shapes) gets a 0.3 answer.
    const legacy = await fetch(`${url}/a2a`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 1,
        method: 'message/send',
        params: {
          message: {
            kind: 'message',
            messageId: 'm1',
            role: 'user',
            contextId: 'legacy',
            parts: [{ kind: 'text', text: 'hello' }],
          },
        },
      }),
    });
    const answer = (await legacy.json()) as {
      result: { kind: string; status: { state: string }; artifacts: { parts: { text: string }[] }[] };
    };
    expect(answer.result).toMatchObject({ kind: 'task', status: { state: 'completed' } });
    expect(answer.result.artifacts[0]!.parts.map((part) => part.text).join('')).toBe('You said: hello');
    expect(transcript(agent, 'bad')).toEqual(before);
    expect(log.deleted).toEqual([]);
  });
});

/** A local composite whose forward asks a remote A2A agent (held in `remote`). */
class Relay extends AsyncAgent {
  readonly remote: AsyncA2AAgent<string>;
  constructor(url: string) {
    super({ name: 'relay' });
    this.remote = new AsyncA2AAgent<string>({ url, name: 'remote' });
  }
  override async forward(messages: AgentMessage[], options: ForwardOptions) {
    const reply = await this.remote.call(messages, { sessionId: options.sessionId });
    return `relayed: ${reply.content}`;
  }
}

describe('AsyncA2AAgent: a remote A2A agent as a sub-agent', () => {
  it('call and stream: the reply, the text as it grows; a failure is an HTTPAgentError', async () => {
    const { agent } = assistant();
    const { url } = await serve({ agent });
    const remote = new AsyncA2AAgent<string>({ url });
    expect((await remote.call('hello', { sessionId: 'a' })).content).toBe('You said: hello');
    const chunks: AgentMessage<string>[] = [];
    for await (const chunk of remote.stream('weather in Rome', { sessionId: 'a' })) chunks.push(chunk);
    expect(chunks.length).toBeGreaterThan(3);
    expect(chunks.at(-1)!.content).toBe('Done: sunny in Rome');
    expect(
      chunks
        .slice(0, -1)
        .map((chunk) => chunk.delta)
        .join(''),
    ).toBe('Done: sunny in Rome');
    expect(transcript(agent, 'a')).toEqual([
      'hello',
      'You said: hello',
      'weather in Rome',
      'Done: sunny in Rome',
    ]);
    const failure = await remote.call('fail', { sessionId: 'a' }).catch((error: unknown) => error);
    expect(failure).toBeInstanceOf(HTTPAgentError);
    expect((failure as Error).message).toMatch(/the task failed: the model is down/);
  });

  it("the remote's input-required is an interrupt of the local tree at the client's path; resuming it goes on the remote task", async () => {
    const { agent, log } = assistant();
    const { url } = await serve({ agent });
    const relay = new Relay(url);
    const paused = await relay.call('delete /tmp/r', { sessionId: 'tree' });
    const [ask] = interruptsOf(paused);
    expect(ask).toMatchObject({
      path: 'remote',
      toolCall: { name: 'Delete', arguments: { path: '/tmp/r' } },
    });
    expect(log.deleted).toEqual([]);
    const done = await relay.call(resumeWith([{ id: ask!.id, approve: true }]), { sessionId: 'tree' });
    expect(done.content).toBe('relayed: Done: deleted /tmp/r');
    expect(log.deleted).toEqual(['/tmp/r']);
  });

  it("a remote sub-agent's input-required is an interrupt at the client's path joined with the remote's", async () => {
    const { agent, log } = desk();
    const { url } = await serve({ agent });
    const relay = new Relay(url);
    const paused = await relay.call('publish Notes', { sessionId: 'nested' });
    const [ask] = interruptsOf(paused);
    expect(ask).toMatchObject({ path: 'remote.researcher', toolCall: { name: 'Publish' } });
    expect(log.published).toEqual([]);
    const done = await relay.call(resumeWith([{ id: ask!.id, approve: false, reason: 'not yet' }]), {
      sessionId: 'nested',
    });
    expect(done.content).toMatch(/^relayed: The desk reports: found: .*declined.*not yet/);
    expect(log.published).toEqual([]);
  });

  it('a budget goes to the remote in the metadata and the remote reports what it spent; over it, the refusal is the budget error', async () => {
    const { agent } = assistant();
    const { url } = await serve({ agent });
    const remote = new AsyncA2AAgent<string>({ url });
    const reply = await remote.call('hello', { sessionId: 'budget', budget: { modelCalls: 5 } });
    expect(reply.extraInfo).toMatchObject({ usage: { modelCalls: 1 } });
    const over = await remote
      .call('weather in Oslo', { sessionId: 'budget', budget: { modelCalls: 1 } })
      .catch((error: unknown) => error);
    expect(over).toBeInstanceOf(BudgetExceededError);
  });

  it('an abort cancels the remote task, which leaves its session as it was', async () => {
    const { agent, log } = assistant();
    const { server, url } = await serve({ agent });
    const remote = new AsyncA2AAgent<string>({ url });
    await remote.call('hi', { sessionId: 'abort' });
    const controller = new AbortController();
    const calling = remote
      .call('hang', { sessionId: 'abort', signal: controller.signal })
      .catch((error: unknown) => error);
    await log.hanging;
    controller.abort(new Error('stop'));
    expect(await calling).toMatchObject({ message: 'stop' });
    await log.hangAborted;
    await vi.waitFor(() => expect(server.inFlight).toBe(0));
    expect(transcript(agent, 'abort')).toEqual(['hi', 'You said: hi']);
  });
});
