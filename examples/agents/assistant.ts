/**
 * An agent module for the `lagent` command line:
 *
 *   npx tsx node_modules/.bin/lagent chat --agent examples/agents/assistant.ts
 *   npx tsx node_modules/.bin/lagent batch questions.jsonl -o answers.jsonl --agent examples/agents/assistant.ts
 *
 * The default export is a factory: the command passes `{ command, streaming }`, and the factory builds the
 * streaming variant for `chat` and `serve` (replies show as they arrive) and the plain one for `batch` and
 * `worker`. Runs on the scripted mock model, or on a real endpoint when OPENAI_API_KEY or OPENAI_BASE_URL is set.
 * `lagent serve` and `lagent ui` need the optional peer `fastify` (`npm install fastify`), `lagent worker`
 * `bullmq` and `ioredis`.
 */
import { AsyncAgent, AsyncStreamingAgent } from 'lagent-ts';
import { pickAsyncLLM } from '../shared/model';

/** What the command line passes to an agent module's factory. */
interface AgentContext {
  command: 'chat' | 'serve' | 'worker' | 'batch';
  streaming: boolean;
}

export default function createAssistant({ streaming }: AgentContext) {
  const llm = pickAsyncLLM((messages) => {
    const question = String(messages.at(-1)?.content ?? '');
    const turns = messages.filter((message) => message.role === 'user').length;
    return `(mock model, turn ${turns}) You asked: ${question}`;
  });
  const options = {
    llm,
    template: 'You are a concise assistant. Answer in at most three sentences.',
    name: 'assistant',
  };
  return streaming ? new AsyncStreamingAgent(options) : new AsyncAgent(options);
}
