import OpenAI from 'openai';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { assistant, closeServers, desk, serve, transcript } from './fixtures';

/*
 * OpenAI chat completions, driven by the `openai` SDK: the model is the agent's name, the session the `user`
 * field (or an X-Session-Id header); only the newest message is taken from a session's request.
 */

afterEach(closeServers);

const DELETE_TOOL = {
  type: 'function' as const,
  function: { name: 'Delete', parameters: { type: 'object', properties: { path: { type: 'string' } } } },
};

async function client(agent: Parameters<typeof serve>[0]['agent']) {
  const { server, url } = await serve({ agent });
  return { server, openai: new OpenAI({ baseURL: `${url}/v1`, apiKey: 'unused', maxRetries: 0 }) };
}

describe('OpenAI chat completions', () => {
  it('lists the agent as the model, and answers a plain request with its reply and reasoning', async () => {
    const { agent } = assistant();
    const { openai } = await client(agent);
    const models = await openai.models.list();
    expect(models.data.map((model) => model.id)).toEqual(['assistant']);
    const completion = await openai.chat.completions.create({
      model: 'assistant',
      messages: [
        { role: 'system', content: 'ignored: the agent keeps its own' },
        { role: 'user', content: 'hello' },
      ],
      user: 'plain',
    });
    expect(completion.object).toBe('chat.completion');
    expect(completion.model).toBe('assistant');
    expect(completion.choices[0]!.message.content).toBe('You said: hello');
    expect(completion.choices[0]!.finish_reason).toBe('stop');
    expect((completion.choices[0]!.message as { reasoning_content?: string }).reasoning_content).toBe(
      'Echoing.',
    );
    expect(transcript(agent, 'plain')).toEqual(['hello', 'You said: hello']);
  });

  it('streams the reply as deltas (reasoning first), and tool progress as agent_event fields', async () => {
    const { agent } = assistant();
    const { openai } = await client(agent);
    const stream = await openai.chat.completions.create({
      model: 'assistant',
      messages: [{ role: 'user', content: 'weather in Paris' }],
      user: 'streamed',
      stream: true,
      stream_options: { include_usage: true },
    });
    let text = '';
    let reasoning = '';
    const events: { kind: string; path: string }[] = [];
    let finish: string | null = null;
    let chunks = 0;
    for await (const chunk of stream) {
      chunks++;
      const choice = chunk.choices[0];
      if (choice === undefined) continue;
      const delta = choice.delta as { content?: string; reasoning_content?: string; agent_event?: never };
      text += delta.content ?? '';
      reasoning += delta.reasoning_content ?? '';
      if (delta.agent_event !== undefined) events.push(delta.agent_event);
      finish = choice.finish_reason ?? finish;
    }
    expect(text).toBe('Done: sunny in Paris');
    expect(reasoning).toBe('The tool answered.');
    expect(finish).toBe('stop');
    expect(chunks).toBeGreaterThan(5);
    expect(events.map((event) => [event.kind, event.path])).toEqual([
      ['toolStart', ''],
      ['toolEnd', ''],
    ]);
    expect(transcript(agent, 'streamed')).toEqual(['weather in Paris', 'Done: sunny in Paris']);
  });

  it('a call that needs approval finishes with tool_calls when the client sent the same tool; a tool message approves it', async () => {
    const { agent, log } = assistant();
    const { openai } = await client(agent);
    const messages: OpenAI.ChatCompletionMessageParam[] = [{ role: 'user', content: 'delete /tmp/a' }];
    const paused = await openai.chat.completions.create({
      model: 'assistant',
      messages,
      tools: [DELETE_TOOL],
      user: 'approve',
    });
    const choice = paused.choices[0]!;
    expect(choice.finish_reason).toBe('tool_calls');
    const [call] = choice.message.tool_calls!;
    expect(call).toMatchObject({
      type: 'function',
      function: { name: 'Delete', arguments: '{"path":"/tmp/a"}' },
    });
    expect(log.deleted).toEqual([]);
    messages.push(choice.message, { role: 'tool', tool_call_id: call!.id, content: 'approve' });
    const done = await openai.chat.completions.create({
      model: 'assistant',
      messages,
      tools: [DELETE_TOOL],
      user: 'approve',
    });
    expect(done.choices[0]!.message.content).toBe('Done: deleted /tmp/a');
    expect(log.deleted).toEqual(['/tmp/a']);
  });

  it('declined in a streamed request: the tool does not run and the model reads why', async () => {
    const { agent, log } = assistant();
    const { openai } = await client(agent);
    const paused = await openai.chat.completions.create({
      model: 'assistant',
      messages: [{ role: 'user', content: 'delete /tmp/b' }],
      tools: [DELETE_TOOL],
      user: 'decline',
    });
    const message = paused.choices[0]!.message;
    const stream = await openai.chat.completions.create({
      model: 'assistant',
      messages: [
        { role: 'user', content: 'delete /tmp/b' },
        message,
        { role: 'tool', tool_call_id: message.tool_calls![0]!.id, content: 'decline: keep it' },
      ],
      user: 'decline',
      stream: true,
    });
    let text = '';
    for await (const chunk of stream) text += chunk.choices[0]?.delta.content ?? '';
    expect(text).toMatch(/^Done: .*declined.*keep it/);
    expect(log.deleted).toEqual([]);
  });

  it('without the tool, the pause is a plain message saying what waits', async () => {
    const { agent } = assistant();
    const { openai } = await client(agent);
    const paused = await openai.chat.completions.create({
      model: 'assistant',
      messages: [{ role: 'user', content: 'delete /tmp/c' }],
      user: 'plainpause',
    });
    expect(paused.choices[0]!.finish_reason).toBe('stop');
    expect(paused.choices[0]!.message.content).toMatch(
      /^Waiting for approval: Delete\(\{"path":"\/tmp\/c"\}\)/,
    );
  });

  it("a sub-agent's progress rides on the streamed chunks", async () => {
    const { agent } = desk();
    const { openai } = await client(agent);
    const stream = await openai.chat.completions.create({
      model: 'desk',
      messages: [{ role: 'user', content: 'quantum' }],
      user: 'desk',
      stream: true,
    });
    let text = '';
    const events: { kind: string; path: string; name?: string }[] = [];
    for await (const chunk of stream) {
      const delta = chunk.choices[0]?.delta as { content?: string; agent_event?: never } | undefined;
      text += delta?.content ?? '';
      if (delta?.agent_event !== undefined) events.push(delta.agent_event);
    }
    expect(text).toBe('The desk reports: found: results for quantum');
    expect(events.map((event) => `${event.kind} ${event.path}`)).toEqual([
      'agentStart researcher',
      'toolStart researcher',
      'toolEnd researcher',
      'agentEnd researcher',
    ]);
  });

  it("a sub-agent's approval: its call finishes the stream as a tool call; a tool message approves it", async () => {
    const { agent, log } = desk();
    const { openai } = await client(agent);
    const tools = [
      {
        type: 'function' as const,
        function: { name: 'Publish', parameters: { type: 'object', properties: { title: {} } } },
      },
    ];
    const messages: OpenAI.ChatCompletionMessageParam[] = [{ role: 'user', content: 'publish Findings' }];
    const stream = await openai.chat.completions.create({
      model: 'desk',
      messages,
      tools,
      user: 'desk-publish',
      stream: true,
    });
    const calls: { id?: string; function?: { name?: string; arguments?: string } }[] = [];
    let finish: string | null = null;
    for await (const chunk of stream) {
      for (const call of chunk.choices[0]?.delta.tool_calls ?? []) calls[call.index] = call;
      finish = chunk.choices[0]?.finish_reason ?? finish;
    }
    expect(finish).toBe('tool_calls');
    expect(calls).toHaveLength(1);
    expect(calls[0]).toMatchObject({ function: { name: 'Publish', arguments: '{"title":"Findings"}' } });
    expect(calls[0]!.id).toMatch(/^researcher:/);
    expect(log.published).toEqual([]);
    messages.push(
      {
        role: 'assistant',
        content: null,
        tool_calls: [{ id: calls[0]!.id!, type: 'function', function: { name: 'Publish', arguments: '{}' } }],
      },
      { role: 'tool', tool_call_id: calls[0]!.id!, content: 'approve' },
    );
    const done = await openai.chat.completions.create({
      model: 'desk',
      messages,
      tools,
      user: 'desk-publish',
    });
    expect(done.choices[0]!.message.content).toBe('The desk reports: found: published Findings');
    expect(log.published).toEqual(['Findings']);
  });

  it('a failing agent is a 500 with its message (exposeErrors), and the session keeps nothing of it', async () => {
    const { agent } = assistant();
    const { openai } = await client(agent);
    const failure = await openai.chat.completions
      .create({ model: 'assistant', messages: [{ role: 'user', content: 'fail' }], user: 'failing' })
      .catch((error: unknown) => error);
    expect(failure).toBeInstanceOf(OpenAI.InternalServerError);
    expect((failure as Error).message).toMatch(/the model is down/);
    const streamed = await openai.chat.completions
      .create({
        model: 'assistant',
        messages: [{ role: 'user', content: 'fail' }],
        user: 'failing',
        stream: true,
      })
      .catch((error: unknown) => error);
    expect(streamed).toBeInstanceOf(OpenAI.InternalServerError);
    expect(transcript(agent, 'failing')).toEqual([]);
  });

  it('a client that aborts a stream stops the call, which leaves the session as it was', async () => {
    const { agent, log } = assistant();
    const { server, openai } = await client(agent);
    await openai.chat.completions.create({
      model: 'assistant',
      messages: [{ role: 'user', content: 'hi' }],
      user: 'abort',
    });
    const controller = new AbortController();
    const stream = await openai.chat.completions.create(
      { model: 'assistant', messages: [{ role: 'user', content: 'hang' }], user: 'abort', stream: true },
      { signal: controller.signal },
    );
    // The SDK ends the iteration quietly when its signal aborts.
    const reading = (async () => {
      for await (const _ of stream);
    })().catch(() => undefined);
    await log.hanging;
    controller.abort();
    await log.hangAborted;
    await reading;
    await vi.waitFor(() => expect(server.inFlight).toBe(0));
    expect(transcript(agent, 'abort')).toEqual(['hi', 'You said: hi']);
  });

  it('without a session the conversation is taken as given, and forgotten after the call', async () => {
    const { agent } = assistant();
    const { openai } = await client(agent);
    const completion = await openai.chat.completions.create({
      model: 'assistant',
      messages: [
        { role: 'user', content: 'first' },
        { role: 'assistant', content: 'You said: first' },
        { role: 'user', content: 'second' },
      ],
    });
    expect(completion.choices[0]!.message.content).toBe('You said: second');
    expect(agent.memory!.sessions()).toEqual([]);
  });
});

describe('OpenAI chat completions: bad input is a clear 4xx and changes nothing', () => {
  it('unknown roles, a forged history, approving what does not wait, an unknown model, malformed bodies', async () => {
    const { agent, log } = assistant();
    const { server, openai } = await client(agent);
    await openai.chat.completions.create({
      model: 'assistant',
      messages: [{ role: 'user', content: 'one' }],
      user: 'bad',
    });
    const before = transcript(agent, 'bad');
    const refused = async (body: Record<string, unknown>) =>
      openai.chat.completions.create(body as never).then(
        () => {
          throw new Error('answered');
        },
        (error: unknown) => error as InstanceType<typeof OpenAI.APIError>,
      );

    const role = await refused({
      model: 'assistant',
      messages: [{ role: 'wizard', content: 'hi' }],
      user: 'bad',
    });
    expect(role.status).toBe(400);
    expect(role.message).toMatch(/role "wizard"/);

    const forged = await refused({
      model: 'assistant',
      messages: [
        { role: 'user', content: 'not what I said' },
        { role: 'assistant', content: 'You said: one' },
        { role: 'user', content: 'two' },
      ],
      user: 'bad',
    });
    expect(forged.status).toBe(409);
    expect(forged.message).toMatch(/does not match the session/);

    const inserted = await refused({
      model: 'assistant',
      messages: [
        { role: 'user', content: 'one' },
        { role: 'assistant', content: 'You said: one' },
        { role: 'user', content: 'an extra turn' },
        { role: 'assistant', content: 'sure' },
        { role: 'user', content: 'two' },
      ],
      user: 'bad',
    });
    expect(inserted.status).toBe(409);

    const notWaiting = await refused({
      model: 'assistant',
      messages: [
        { role: 'user', content: 'one' },
        {
          role: 'assistant',
          content: null,
          tool_calls: [{ id: 'call_9', type: 'function', function: { name: 'Delete', arguments: '{}' } }],
        },
        { role: 'tool', tool_call_id: 'call_9', content: 'approve' },
      ],
      user: 'bad',
    });
    expect(notWaiting.status).toBe(409);
    expect(notWaiting.message).toMatch(/"call_9"/);

    const model = await refused({
      model: 'gpt-4o',
      messages: [{ role: 'user', content: 'hi' }],
      user: 'bad',
    });
    expect(model.status).toBe(404);

    const response = await fetch(`${server.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{"messages": [',
    });
    expect(response.status).toBe(400);
    const noMessages = await refused({ model: 'assistant', messages: [], user: 'bad' });
    expect(noMessages.status).toBe(400);
    const badAnswer = await refused({
      model: 'assistant',
      messages: [{ role: 'tool', tool_call_id: 'x', content: 'maybe' }],
      user: 'bad',
    });
    expect(badAnswer.status).toBe(400);

    expect(transcript(agent, 'bad')).toEqual(before);
    expect(log.deleted).toEqual([]);
  });

  it('generation parameters go through the caller policy: refused ones are named in Lagent-Ignored-Options', async () => {
    const { agent } = assistant();
    const { url } = await serve({ agent, callerOptions: { generation: { temperature: true } } });
    const response = await fetch(`${url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-session-id': 'policy' },
      body: JSON.stringify({
        model: 'assistant',
        messages: [{ role: 'user', content: 'hi' }],
        temperature: 0.5,
        max_tokens: 10,
        tools: [],
        seed: 1,
      }),
    });
    expect(response.status).toBe(200);
    // `tools` are read (the client's tools, or the approvals it answers): an empty list is not ignored.
    expect(response.headers.get('lagent-ignored-options')).toBe('seed, max_new_tokens');
  });
});
