/**
 * The agent behind the useChat example, for `lagent serve --agent examples/use-chat/agent.ts`: a streaming
 * function-calling assistant with three tools. `Weather` answers at once; `DeleteFile` needs a person's approval
 * (the page shows Approve / Decline); `Research` hands the question to a researcher sub-agent with a search tool of
 * its own, whose progress the page shows as it runs. On the scripted mock model by default; a real model when
 * OPENAI_API_KEY or OPENAI_BASE_URL is set.
 */
import { AsyncFunctionCallingAgent, AsyncStreamingFunctionCallingAgent, asyncTool } from 'lagent-ts';
import type { MockResponses } from 'lagent-ts/testing';
import { z } from 'zod';
import { pickAsyncLLM } from '../shared/model';

/** The assistant's mock model: a tool for what the user asks, then an answer from the tool's result. */
const assistantScript: MockResponses = (messages) => {
  const last = messages.at(-1)!;
  const text = String(last.content ?? '');
  if (last.role === 'tool')
    return { content: `Here is what I found: ${text}`, reasoning: 'The tool answered.' };
  const ask = /^(weather in|delete|research) (.+)$/i.exec(text.trim());
  if (ask === null)
    return {
      content: `You said: ${text}. Try "weather in Paris", "delete notes.txt" or "research A2A".`,
      reasoning: 'Nothing to call.',
    };
  const [, verb, what] = ask as unknown as [string, string, string];
  const name = { 'weather in': 'Weather', delete: 'DeleteFile', research: 'Research' }[verb.toLowerCase()]!;
  const args = name === 'Weather' ? { city: what } : name === 'DeleteFile' ? { name: what } : { topic: what };
  return {
    content: 'Let me check.',
    reasoning: `The user wants ${name}.`,
    toolCalls: [{ name, arguments: args }],
  };
};

/** The researcher's mock model: search, then sum up. */
const researcherScript: MockResponses = (messages) => {
  const last = messages.at(-1)!;
  if (last.role === 'tool') return `3 sources agree: ${String(last.content)}`;
  return { toolCalls: [{ name: 'Search', arguments: { query: String(last.content) } }] };
};

export default function createAgent(): AsyncStreamingFunctionCallingAgent {
  const researcher = new AsyncFunctionCallingAgent({
    llm: pickAsyncLLM(researcherScript),
    name: 'researcher',
    description: 'Searches the web and sums up what it found',
    actions: [
      asyncTool({
        name: 'Search',
        description: 'Searches the web',
        parameters: z.object({ query: z.string() }),
        run: async ({ query }) => `${query} is an open protocol for agents to talk to each other`,
      }),
    ],
  });
  const agent = new AsyncStreamingFunctionCallingAgent({
    llm: pickAsyncLLM(assistantScript),
    name: 'assistant',
    description: 'A helpful assistant with tools',
    template: 'You are a helpful assistant. Use the tools when they help.',
    actions: [
      asyncTool({
        name: 'Weather',
        description: 'The weather in a city',
        parameters: z.object({ city: z.string() }),
        run: async ({ city }) => `sunny and 21 °C in ${city}`,
      }),
      asyncTool({
        name: 'DeleteFile',
        description: 'Deletes a file',
        parameters: z.object({ name: z.string() }),
        needsApproval: true,
        run: async ({ name }) => `deleted ${name}`,
      }),
      asyncTool({
        name: 'Research',
        description: 'Asks the researcher to look a topic up',
        parameters: z.object({ topic: z.string() }),
        run: async ({ topic }, { sessionId }) =>
          String((await researcher.call(topic, { sessionId })).content),
      }),
    ],
  });
  // Held by the assistant, the researcher is part of its tree: its calls and tool calls reach the page.
  Object.assign(agent, { researcher });
  return agent;
}
