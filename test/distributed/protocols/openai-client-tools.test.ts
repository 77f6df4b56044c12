import {
  AsyncStreamingFunctionCallingAgent,
  asyncTool,
  type ChatMessage,
  pendingInterrupts,
} from 'lagent-ts';
import { AsyncMockLLM, type MockReply } from 'lagent-ts/testing';
import OpenAI from 'openai';
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { closeServers, serve, transcript } from './fixtures';

/*
 * The client's own tools over OpenAI chat completions, driven by the `openai` SDK: a request's `tools` that are not
 * the agent's are offered to its model; a call of one finishes the completion with the assistant message's
 * `tool_calls` (finish_reason `tool_calls`), streamed or not; the next request on the same session, whose newest
 * messages are `tool` messages with those `tool_call_id`s, resumes the call with their outputs.
 */

afterEach(closeServers);

const confirm: OpenAI.ChatCompletionTool = {
  type: 'function',
  function: {
    name: 'confirm',
    description: 'Asks the user to confirm',
    parameters: { type: 'object', properties: { question: { type: 'string' } }, required: ['question'] },
  },
};

/**
 * The model: `ask X` calls the client's `confirm`; `plan a picnic` calls the server's `Weather` and `confirm` in
 * one turn; after tools it says what they gave; anything else is echoed.
 */
function script(messages: ChatMessage[]): string | MockReply {
  const last = messages.at(-1)!;
  if (last.role === 'tool') {
    const results: string[] = [];
    for (let i = messages.length - 1; messages[i]!.role === 'tool'; i--)
      results.unshift(String(messages[i]!.content));
    return `Done: ${results.join(' + ')}`;
  }
  const text = String(last.content);
  if (text.startsWith('ask '))
    return { toolCalls: [{ name: 'confirm', arguments: { question: text.slice(4) } }] };
  if (text === 'plan a picnic') {
    return {
      content: 'Let me check.',
      toolCalls: [
        { name: 'Weather', arguments: { city: 'Paris' } },
        { name: 'confirm', arguments: { question: 'Paris?' } },
      ],
    };
  }
  return `You said: ${text}`;
}

function assistant() {
  const runs: string[] = [];
  const llm = new AsyncMockLLM({ responses: (messages) => script(messages), chunkSize: 4 });
  const agent = new AsyncStreamingFunctionCallingAgent({
    llm,
    name: 'assistant',
    actions: [
      asyncTool({
        name: 'Weather',
        description: 'The weather in a city',
        parameters: z.object({ city: z.string() }),
        run: async ({ city }) => {
          runs.push(city);
          return `sunny in ${city}`;
        },
      }),
    ],
  });
  return { agent, llm, runs };
}

async function client(agent: AsyncStreamingFunctionCallingAgent) {
  const { server, url } = await serve({ agent });
  return { server, url, openai: new OpenAI({ baseURL: `${url}/v1`, apiKey: 'unused', maxRetries: 0 }) };
}

/** A streamed completion read whole: its text, its tool calls (their deltas put together) and its finish. */
async function readStream(stream: AsyncIterable<OpenAI.ChatCompletionChunk>) {
  let text = '';
  let finish: string | null = null;
  const calls: { id: string; name: string; arguments: string }[] = [];
  for await (const chunk of stream) {
    const choice = chunk.choices[0];
    if (choice === undefined) continue;
    text += choice.delta.content ?? '';
    for (const call of choice.delta.tool_calls ?? []) {
      calls[call.index] ??= { id: '', name: '', arguments: '' };
      const at = calls[call.index]!;
      at.id += call.id ?? '';
      at.name += call.function?.name ?? '';
      at.arguments += call.function?.arguments ?? '';
    }
    finish = choice.finish_reason ?? finish;
  }
  return { text, calls, finish };
}

describe("OpenAI chat completions: the client's tools", () => {
  it("a call of the client's tool finishes with tool_calls; the tool message with its output resumes the call", async () => {
    const { agent, llm } = assistant();
    const { openai } = await client(agent);
    const messages: OpenAI.ChatCompletionMessageParam[] = [{ role: 'user', content: 'ask is it ok?' }];
    const paused = await openai.chat.completions.create({
      model: 'assistant',
      messages,
      tools: [confirm],
      user: 'alice',
    });
    expect(llm.calls[0]!.tools?.map((tool) => tool.function.name)).toEqual(['Weather', 'confirm']);
    const choice = paused.choices[0]!;
    expect(choice.finish_reason).toBe('tool_calls');
    expect(choice.message.content).toBeNull();
    const [call] = choice.message.tool_calls!;
    expect(call).toMatchObject({
      type: 'function',
      function: { name: 'confirm', arguments: '{"question":"is it ok?"}' },
    });
    expect(await pendingInterrupts(agent, 'alice')).toMatchObject([{ id: call!.id, kind: 'client-tool' }]);

    messages.push(choice.message, { role: 'tool', tool_call_id: call!.id, content: 'yes, go ahead' });
    const done = await openai.chat.completions.create({
      model: 'assistant',
      messages,
      tools: [confirm],
      user: 'alice',
    });
    expect(done.choices[0]!.finish_reason).toBe('stop');
    expect(done.choices[0]!.message.content).toBe('Done: yes, go ahead');
    expect(llm.calls[1]!.messages.at(-1)).toMatchObject({ role: 'tool', content: 'yes, go ahead' });
    expect(await pendingInterrupts(agent, 'alice')).toEqual([]);
    expect(transcript(agent, 'alice')).toEqual(['ask is it ok?', 'Done: yes, go ahead']);
    // The conversation goes on as the client keeps it.
    messages.push(done.choices[0]!.message, { role: 'user', content: 'thanks' });
    const next = await openai.chat.completions.create({ model: 'assistant', messages, user: 'alice' });
    expect(next.choices[0]!.message.content).toBe('You said: thanks');
  });

  it('streamed: the tool calls come as deltas with finish_reason tool_calls; the streamed resume answers', async () => {
    const { agent } = assistant();
    const { openai } = await client(agent);
    const paused = await readStream(
      await openai.chat.completions.create({
        model: 'assistant',
        messages: [{ role: 'user', content: 'ask may I?' }],
        tools: [confirm],
        user: 'bob',
        stream: true,
      }),
    );
    expect(paused.finish).toBe('tool_calls');
    expect(paused.calls).toEqual([
      { id: expect.any(String), name: 'confirm', arguments: '{"question":"may I?"}' },
    ]);
    const [call] = paused.calls;
    const resumed = await readStream(
      await openai.chat.completions.create({
        model: 'assistant',
        messages: [
          { role: 'user', content: 'ask may I?' },
          {
            role: 'assistant',
            content: null,
            tool_calls: [
              { id: call!.id, type: 'function', function: { name: call!.name, arguments: call!.arguments } },
            ],
          },
          { role: 'tool', tool_call_id: call!.id, content: 'you may' },
        ],
        tools: [confirm],
        user: 'bob',
        stream: true,
      }),
    );
    expect(resumed).toEqual({ text: 'Done: you may', calls: [], finish: 'stop' });
    expect(transcript(agent, 'bob')).toEqual(['ask may I?', 'Done: you may']);
  });

  it("the client's tool and the server's in one turn: the call pauses before either runs; resumed, both answer", async () => {
    const { agent, runs } = assistant();
    const { openai } = await client(agent);
    const messages: OpenAI.ChatCompletionMessageParam[] = [{ role: 'user', content: 'plan a picnic' }];
    const paused = await openai.chat.completions.create({
      model: 'assistant',
      messages,
      tools: [confirm],
      user: 'carol',
    });
    const message = paused.choices[0]!.message;
    expect(paused.choices[0]!.finish_reason).toBe('tool_calls');
    expect(message.tool_calls!.map((call) => (call as { function: { name: string } }).function.name)).toEqual(
      ['confirm'],
    );
    expect(runs).toEqual([]);
    messages.push(message, { role: 'tool', tool_call_id: message.tool_calls![0]!.id, content: 'yes' });
    const done = await openai.chat.completions.create({ model: 'assistant', messages, user: 'carol' });
    expect(done.choices[0]!.message.content).toBe('Done: sunny in Paris + yes');
    expect(runs).toEqual(['Paris']);
  });

  it('bad input: a malformed tool, an output for a call that does not wait, another session; nothing changes', async () => {
    const { agent, runs, llm } = assistant();
    const { openai, url } = await client(agent);
    const paused = await openai.chat.completions.create({
      model: 'assistant',
      messages: [{ role: 'user', content: 'ask really?' }],
      tools: [confirm],
      user: 'dave',
    });
    const message = paused.choices[0]!.message;
    const id = message.tool_calls![0]!.id;
    const before = transcript(agent, 'dave');
    const refused = async (body: Record<string, unknown>) =>
      openai.chat.completions.create(body as never).then(
        () => {
          throw new Error('answered');
        },
        (error: unknown) => error as InstanceType<typeof OpenAI.APIError>,
      );

    const malformed = await refused({
      model: 'assistant',
      messages: [{ role: 'user', content: 'hi' }],
      tools: [{ type: 'function', function: { description: 'no name' } }],
      user: 'dave',
    });
    expect(malformed.status).toBe(400);
    expect(malformed.message).toMatch(/tools\.0|a tool must be/);
    const badName = await refused({
      model: 'assistant',
      messages: [{ role: 'user', content: 'hi' }],
      tools: [{ type: 'function', function: { name: 'has spaces' } }],
      user: 'dave',
    });
    expect(badName.status).toBe(400);

    const wrongId = await refused({
      model: 'assistant',
      messages: [
        { role: 'user', content: 'ask really?' },
        message,
        { role: 'tool', tool_call_id: 'call_not_waiting', content: 'approve' },
      ],
      user: 'dave',
    });
    expect(wrongId.status).toBe(409);
    // The call waits on its own session: another session has nothing to resume.
    const otherSession = await refused({
      model: 'assistant',
      messages: [
        { role: 'user', content: 'ask really?' },
        message,
        { role: 'tool', tool_call_id: id, content: 'approve' },
      ],
      user: 'erin',
    });
    expect(otherSession.status).toBe(409);
    expect(await pendingInterrupts(agent, 'dave')).toMatchObject([{ id, kind: 'client-tool' }]);
    expect(transcript(agent, 'dave')).toEqual(before);
    expect(runs).toEqual([]);

    // Without a session the client's tools are not offered (nothing would keep the call they pause): said so.
    const response = await fetch(`${url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        model: 'assistant',
        messages: [{ role: 'user', content: 'ask stateless?' }],
        tools: [confirm],
      }),
    });
    expect(response.status).toBe(200);
    expect(response.headers.get('lagent-ignored-options')).toMatch(/\btools\b/);
    expect(llm.calls.at(-1)!.tools?.map((tool) => tool.function.name)).toEqual(['Weather']);
  });
});
