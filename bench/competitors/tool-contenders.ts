import type { ChatMessage } from '../../src/index';
import { type ContenderKind, INSTRUCTIONS, REPLY } from './contenders';

/**
 * The frameworks of the side-by-side tool-call benchmark. Every `call` does the same work: one user
 * message in, the system instruction, a model turn that calls the `Weather` tool once
 * (`{ city: 'Paris' }`), the tool run (synchronous, a string out, arguments checked by a zod schema), a
 * second model turn that answers with text, text out, and the whole turn kept as session `id`'s
 * conversation (lagent-ts: the agents' memories; LangGraph.js: its checkpointer, `thread_id` = the
 * session id; the others: the history they return, kept in a map).
 */
export const TOOL_FRAMEWORKS = ['lagent', 'ai', 'agents', 'langgraph'] as const;
export type ToolFramework = (typeof TOOL_FRAMEWORKS)[number];

export function isToolFramework(name: string | undefined): name is ToolFramework {
  return (TOOL_FRAMEWORKS as readonly (string | undefined)[]).includes(name);
}

/** Loads one framework and nothing else (each runs in its own process, as in `contenders.ts`). */
export async function loadToolContender(framework: ToolFramework): Promise<ContenderKind> {
  switch (framework) {
    case 'lagent': {
      const { AsyncFunctionCallingAgent, tool } = await import('../../src/index');
      const { AsyncMockLLM } = await import('../../src/testing/index');
      const { z } = await import('zod');
      const weather = tool({
        name: 'Weather',
        description: 'Current weather of a city',
        parameters: z.object({ city: z.string() }),
        run: ({ city }) => `Sunny in ${city}, 21 °C`,
      });
      // After a tool result, the answer; otherwise one call of Weather.
      const responses = (messages: ChatMessage[]) =>
        messages.at(-1)?.role === 'tool'
          ? REPLY
          : { toolCalls: [{ name: 'Weather', arguments: { city: 'Paris' } }] };
      return {
        name: 'lagent-ts AsyncFunctionCallingAgent.call',
        create(latencyMs) {
          const agent = new AsyncFunctionCallingAgent({
            llm: new AsyncMockLLM({ responses, latencyMs, record: false }),
            actions: [weather],
            template: INSTRUCTIONS,
          });
          // The outer agent keeps the question and the answer, the model-facing one the tool turns too.
          const memories = [agent.memory!, agent.agent.memory!];
          return {
            call: (id, input) =>
              agent.call(input, { sessionId: id }).then((reply) => reply.content as string),
            sessions: () => memories[0]!.size,
            reset: () => {
              for (const memory of memories) for (const id of memory.sessions()) memory.reset(id);
            },
          };
        },
      };
    }
    case 'ai': {
      const { aiSdkToolTurn, scriptedToolModel } = await import('./ai-sdk');
      return {
        name: 'AI SDK generateText with one tool',
        create(latencyMs) {
          const model = scriptedToolModel(REPLY, latencyMs);
          const kept = new Map<number, unknown>();
          return {
            call: async (id, input) => {
              const { text, history } = await aiSdkToolTurn(model, INSTRUCTIONS, input);
              kept.set(id, history);
              return text;
            },
            sessions: () => kept.size,
            reset: () => kept.clear(),
          };
        },
      };
    }
    case 'agents': {
      const { agentsToolSetup, agentsTurn } = await import('./openai-agents');
      return {
        name: 'OpenAI Agents JS run with one tool',
        create(latencyMs) {
          const setup = agentsToolSetup(REPLY, INSTRUCTIONS, latencyMs);
          const kept = new Map<number, unknown>();
          return {
            call: async (id, input) => {
              const { text, history } = await agentsTurn(setup, input);
              kept.set(id, history);
              return text;
            },
            sessions: () => kept.size,
            reset: () => kept.clear(),
          };
        },
      };
    }
    case 'langgraph': {
      const { langGraphReset, langGraphThreads, langGraphToolSetup, langGraphTurn } = await import(
        './langgraph'
      );
      return {
        name: 'LangGraph.js StateGraph invoke with ToolNode',
        create(latencyMs) {
          const setup = langGraphToolSetup(REPLY, INSTRUCTIONS, latencyMs);
          return {
            call: (id, input) => langGraphTurn(setup, id, input),
            sessions: () => langGraphThreads(setup),
            reset: () => langGraphReset(setup),
          };
        },
      };
    }
  }
}
