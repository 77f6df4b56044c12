import { randomUUID } from 'node:crypto';
import { type BaseEvent, HttpAgent, type Tool } from '@ag-ui/client';
import {
  AsyncStreamingFunctionCallingAgent,
  asyncTool,
  type ChatMessage,
  pendingInterrupts,
} from 'lagent-ts';
import { AsyncMockLLM, type MockReply } from 'lagent-ts/testing';
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { closeServers, serve, transcript } from './fixtures';

/*
 * AG-UI frontend tools, driven by `@ag-ui/client`'s `HttpAgent`: the `tools` of a RunAgentInput are offered to
 * the model beside the agent's own; a run whose model calls one ends with its TOOL_CALL_START/ARGS/END and a
 * completed RUN_FINISHED naming it in `pendingToolCallIds`; the client runs it and sends the tool message in the
 * next run, which goes on from there.
 */

afterEach(closeServers);

const confirm: Tool = {
  name: 'confirm',
  description: 'Asks the user to confirm',
  parameters: { type: 'object', properties: { question: { type: 'string' } }, required: ['question'] },
};

/**
 * The model: `ask X` calls the frontend tool `confirm`; `plan a picnic` calls the server's `Weather` and `confirm`
 * in one turn; after tools it says what they gave; anything else is echoed.
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

/** An HttpAgent on a thread offering `tools`, with the events of its last run. */
function client(url: string, threadId: string, tools: Tool[] = [confirm]) {
  const agent = new HttpAgent({ url: `${url}/ag-ui`, threadId });
  const events: BaseEvent[] = [];
  const subscriber = { onEvent: ({ event }: { event: BaseEvent }) => void events.push(event) };
  const run = () => {
    events.length = 0;
    return agent.runAgent({ tools }, subscriber);
  };
  const say = (text: string) => {
    agent.addMessage({ id: randomUUID(), role: 'user', content: text });
    return run();
  };
  /** Answers a frontend tool's call as an application does: a tool message, then a new run. */
  const answer = (toolCallId: string, content: string) => {
    agent.addMessage({ id: randomUUID(), role: 'tool', toolCallId, content });
    return run();
  };
  return { agent, events, say, answer };
}

const types = (events: BaseEvent[]): string[] => events.map((event) => event.type);

type Finished = { outcome?: { type: string; pendingToolCallIds?: string[] }; result?: unknown };

describe('AG-UI frontend tools', () => {
  it("a frontend tool's call ends the run; the client's tool message resumes it and the model uses the result", async () => {
    const { agent, llm } = assistant();
    const { url } = await serve({ agent });
    const ag = client(url, 'frontend');
    await ag.say('ask is it ok?');
    expect(llm.calls[0]!.tools?.map((tool) => tool.function.name)).toEqual(['Weather', 'confirm']);
    expect(types(ag.events)).toEqual([
      'RUN_STARTED',
      'TOOL_CALL_START',
      'TOOL_CALL_ARGS',
      'TOOL_CALL_END',
      'RUN_FINISHED',
    ]);
    const start = ag.events[1] as unknown as { toolCallId: string; toolCallName: string };
    expect(start.toolCallName).toBe('confirm');
    expect((ag.events.at(-1) as Finished).outcome).toEqual({
      type: 'success',
      pendingToolCallIds: [start.toolCallId],
    });
    expect(ag.agent.pendingInterrupts).toEqual([]);
    expect(ag.agent.messages.at(-1)).toMatchObject({
      role: 'assistant',
      toolCalls: [
        { id: start.toolCallId, function: { name: 'confirm', arguments: '{"question":"is it ok?"}' } },
      ],
    });
    expect(await pendingInterrupts(agent, 'frontend')).toMatchObject([
      { id: start.toolCallId, kind: 'client-tool' },
    ]);

    const { result } = await ag.answer(start.toolCallId, 'yes, go ahead');
    expect(types(ag.events)).not.toContain('TOOL_CALL_RESULT');
    expect(result).toBe('Done: yes, go ahead');
    expect(ag.agent.messages.at(-1)).toMatchObject({ role: 'assistant', content: 'Done: yes, go ahead' });
    expect(llm.calls[1]!.messages.at(-1)).toMatchObject({ role: 'tool', content: 'yes, go ahead' });
    expect(transcript(agent, 'frontend')).toEqual(['ask is it ok?', 'Done: yes, go ahead']);
    expect(await pendingInterrupts(agent, 'frontend')).toEqual([]);
    // The thread goes on as HttpAgent keeps it.
    expect((await ag.say('thanks')).result).toBe('You said: thanks');
  });

  it('a frontend tool and a server tool in one turn: the run ends before either runs; resumed, both answer', async () => {
    const { agent, runs } = assistant();
    const { url } = await serve({ agent });
    const ag = client(url, 'both');
    await ag.say('plan a picnic');
    const calls = ag.events.filter((event) => event.type === 'TOOL_CALL_START') as unknown as {
      toolCallId: string;
      toolCallName: string;
    }[];
    expect(calls.map((call) => call.toolCallName)).toEqual(['confirm']);
    expect((ag.events.at(-1) as Finished).outcome?.pendingToolCallIds).toEqual([calls[0]!.toolCallId]);
    expect(runs).toEqual([]);

    await ag.answer(calls[0]!.toolCallId, 'yes');
    expect(types(ag.events).slice(0, 6)).toEqual([
      'RUN_STARTED',
      'TOOL_CALL_START',
      'TOOL_CALL_ARGS',
      'TOOL_CALL_END',
      'TOOL_CALL_RESULT',
      'TEXT_MESSAGE_START',
    ]);
    expect(ag.events[1]).toMatchObject({ toolCallName: 'Weather' });
    expect(ag.events[4]).toMatchObject({ content: 'sunny in Paris' });
    expect(runs).toEqual(['Paris']);
    expect(transcript(agent, 'both')).toEqual(['plan a picnic', 'Done: sunny in Paris + yes']);
  });

  it("a frontend tool named like the agent's tool is a 400 that changes nothing", async () => {
    const { agent, llm } = assistant();
    const { url } = await serve({ agent });
    const ag = client(url, 'clash', [{ name: 'Weather', description: 'the client weather', parameters: {} }]);
    const failure = await ag
      .say('ask ok?')
      .catch((error: unknown) => error as { status?: number; payload?: unknown });
    expect(failure).toMatchObject({
      status: 400,
      payload: {
        detail:
          'assistant: the client tool Weather has the name of a tool of assistant.agent; give it a name of its own',
      },
    });
    expect(llm.calls).toHaveLength(0);
    expect(transcript(agent, 'clash')).toEqual([]);
  });

  it('tool messages for calls that do not wait, or malformed, are a 4xx that changes nothing', async () => {
    const { agent, llm, runs } = assistant();
    const { url } = await serve({ agent });
    const ag = client(url, 'bad');
    await ag.say('plan a picnic');
    const waiting = await pendingInterrupts(agent, 'bad');
    const before = JSON.stringify(agent.stateDict('bad'));
    const post = async (messages: unknown[]) => {
      const response = await fetch(`${url}/ag-ui`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: 'text/event-stream' },
        body: JSON.stringify({
          threadId: 'bad',
          runId: randomUUID(),
          messages: [...ag.agent.messages, ...messages],
          tools: [confirm],
          context: [],
          state: {},
          forwardedProps: {},
        }),
      });
      const body = (await response.json()) as { error: string; detail: string };
      return { status: response.status, ...body };
    };
    const tool = (toolCallId: unknown, content: unknown = 'yes') => ({
      id: randomUUID(),
      role: 'tool',
      toolCallId,
      content,
    });
    expect(await post([tool('call_404')])).toMatchObject({ status: 409, error: 'NotWaiting' });
    expect(await post([tool(waiting[0]!.id), tool(waiting[0]!.id, 'no')])).toMatchObject({
      status: 400,
      detail: expect.stringContaining('answered twice'),
    });
    expect(await post([tool(undefined)])).toMatchObject({ status: 400 });
    expect(await post([tool(waiting[0]!.id, 42)])).toMatchObject({ status: 400 });
    expect(JSON.stringify(agent.stateDict('bad'))).toBe(before);
    expect(await pendingInterrupts(agent, 'bad')).toEqual(waiting);
    expect(llm.calls).toHaveLength(1);
    expect(runs).toEqual([]);
  });
});
