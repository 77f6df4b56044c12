import { AsyncAgent } from '../../src/index';
import { AsyncMockLLM } from '../../src/testing/index';
import { aiSdkTurn, scriptedModel } from './ai-sdk';
import { agentsSetup, agentsTurn } from './openai-agents';

/** The system instruction every framework sends. */
export const INSTRUCTIONS = 'You are terse.';
/** The fixed text every scripted model returns. */
export const REPLY = 'ok';

/**
 * One framework set up for the side-by-side benchmarks. Every `call` does the same work: one user
 * message in, the system instruction, one model turn, text out, and the turn kept as session `id`'s
 * conversation (lagent-ts: the agent's memory; the others: the history they return, kept in a map).
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

export const lagent: ContenderKind = {
  name: 'lagent-ts AsyncAgent.call',
  create(latencyMs) {
    const agent = new AsyncAgent({
      llm: new AsyncMockLLM({ responses: () => REPLY, latencyMs, record: false }),
      template: INSTRUCTIONS,
    });
    const memory = agent.memory!;
    return {
      call: (id, input) => agent.call(input, { sessionId: id }).then((reply) => reply.content as string),
      sessions: () => memory.size,
      reset: () => {
        for (const id of memory.sessions()) memory.reset(id);
      },
    };
  },
};

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

export const aiSdk: ContenderKind = {
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

export const openaiAgents: ContenderKind = {
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
