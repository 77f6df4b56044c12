import type { ChatMessage } from '../../src/index';

/** The system instruction every framework sends. */
export const INSTRUCTIONS = 'You are terse.';
/** The fixed text every scripted model returns. */
export const REPLY = 'ok';

/**
 * One framework set up for the side-by-side benchmarks. Every `call` does the same work: one user
 * message in, the system instruction, one model turn, text out, and the turn kept as session `id`'s
 * conversation (lagent-ts: the agent's memory; LangGraph.js: its checkpointer, `thread_id` = the session
 * id; the others: the history they return, kept in a map).
 */
export interface Contender {
  call(id: number, input: string): Promise<string>;
  /** Sessions kept so far. */
  sessions(): number;
  /** Drops every kept session. */
  reset(): void;
}

export interface ContenderKind {
  name: string;
  create(latencyMs: number): Contender;
}

/**
 * The frameworks the side-by-side benchmarks compare, plus `model`: lagent-ts's scripted model alone
 * (`AsyncMockLLM.chat` with the system and user message, nothing kept), the floor any framework built on
 * that model can reach.
 */
export const FRAMEWORKS = ['model', 'lagent', 'ai', 'agents', 'langgraph'] as const;
export type Framework = (typeof FRAMEWORKS)[number];

export function isFramework(name: string | undefined): name is Framework {
  return (FRAMEWORKS as readonly (string | undefined)[]).includes(name);
}

/**
 * Loads one framework and nothing else: the benchmarks run each in its own process, so that no framework
 * pays for what another switches on process-wide (OpenAI Agents JS's `AsyncLocalStorage`, for one, turns
 * on promise hooks for every promise in the process from its first run on).
 */
export async function loadContender(framework: Framework): Promise<ContenderKind> {
  switch (framework) {
    case 'model': {
      const { AsyncMockLLM } = await import('../../src/testing/index');
      return {
        name: 'bare scripted model (AsyncMockLLM.chat)',
        create(latencyMs) {
          const llm = new AsyncMockLLM({ responses: () => REPLY, latencyMs, record: false });
          // Nothing is kept: `sessions` counts the replies, so lost calls still show.
          let replies = 0;
          return {
            call: (_id, input) => {
              const messages: ChatMessage[] = [
                { role: 'system', content: INSTRUCTIONS },
                { role: 'user', content: input },
              ];
              return llm.chat(messages).then((text) => {
                replies++;
                return text;
              });
            },
            sessions: () => replies,
            reset: () => {
              replies = 0;
            },
          };
        },
      };
    }
    case 'lagent': {
      const { AsyncAgent } = await import('../../src/index');
      const { AsyncMockLLM } = await import('../../src/testing/index');
      return {
        name: 'lagent-ts AsyncAgent.call',
        create(latencyMs) {
          const agent = new AsyncAgent({
            llm: new AsyncMockLLM({ responses: () => REPLY, latencyMs, record: false }),
            template: INSTRUCTIONS,
          });
          const memory = agent.memory!;
          return {
            call: (id, input) =>
              agent.call(input, { sessionId: id }).then((reply) => reply.content as string),
            sessions: () => memory.size,
            reset: () => {
              for (const id of memory.sessions()) memory.reset(id);
            },
          };
        },
      };
    }
    case 'ai': {
      const { aiSdkTurn, scriptedModel } = await import('./ai-sdk');
      return {
        name: 'AI SDK generateText',
        create(latencyMs) {
          const model = scriptedModel(REPLY, latencyMs);
          const { keep, sessions, reset } = keeper<unknown>();
          return {
            call: async (id, input) => {
              const { text, history } = await aiSdkTurn(model, INSTRUCTIONS, input);
              keep(id, history);
              return text;
            },
            sessions,
            reset,
          };
        },
      };
    }
    case 'agents': {
      const { agentsSetup, agentsTurn } = await import('./openai-agents');
      return {
        name: 'OpenAI Agents JS run',
        create(latencyMs) {
          const setup = agentsSetup(REPLY, INSTRUCTIONS, latencyMs);
          const { keep, sessions, reset } = keeper<unknown>();
          return {
            call: async (id, input) => {
              const { text, history } = await agentsTurn(setup, input);
              keep(id, history);
              return text;
            },
            sessions,
            reset,
          };
        },
      };
    }
    case 'langgraph': {
      const { langGraphReset, langGraphSetup, langGraphThreads, langGraphTurn } = await import('./langgraph');
      return {
        name: 'LangGraph.js StateGraph invoke',
        create(latencyMs) {
          const setup = langGraphSetup(REPLY, INSTRUCTIONS, latencyMs);
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

/** Keeps each session's returned history, as a caller of a stateless API would. */
function keeper<H>() {
  const kept = new Map<number, H>();
  return {
    keep(id: number, history: H) {
      kept.set(id, history);
    },
    sessions: () => kept.size,
    reset: () => kept.clear(),
  };
}
