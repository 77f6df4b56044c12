/**
 * ReAct: a select agent answers with JSON steps — a tool call (`thought_process` + `action`) or an answer
 * (`thought_process` + `conclusion`) — and an executor runs the calls until there is a conclusion. Output the
 * format cannot read comes back to the model as a turn to correct, and `maxTurn` bounds the loop.
 * Runs on the built-in mock model, or on a real endpoint when OPENAI_API_KEY / OPENAI_BASE_URL is set.
 */
import { type AgentMessage, AsyncReAct, asyncTool, ReAct, tool } from 'lagent-ts';
import { z } from 'zod';
import { describeModel, pickAsyncLLM, pickLLM } from './shared/model';
import { heading, isMain } from './shared/print';

/** Evaluates plain arithmetic (digits, + - * / ** and parentheses); anything else is an error the model reads. */
function evaluate(expression: string): number {
  if (!/^[\d\s+\-*/().]+$/.test(expression)) throw new Error(`cannot evaluate ${JSON.stringify(expression)}`);
  return Function(`"use strict"; return (${expression});`)() as number;
}

const calculator = tool({
  name: 'Calculator',
  description: 'Evaluates an arithmetic expression such as (3 + 4) ** 2',
  parameters: z.object({ expression: z.string().describe('The expression to evaluate') }),
  run: ({ expression }) => evaluate(expression),
});

const step = (expression: string, thought: string) =>
  JSON.stringify({ thought_process: thought, action: { name: 'Calculator', parameters: { expression } } });
const isPlainObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/** The conclusion of a reply, or its text when it has none (e.g. when maxTurn stopped the loop). */
const conclusionOf = (reply: AgentMessage): string =>
  isPlainObject(reply.formatted) && typeof reply.formatted.conclusion === 'string'
    ? reply.formatted.conclusion
    : String(reply.content);

const answer = (conclusion: string) => JSON.stringify({ thought_process: 'I have the result.', conclusion });

function syncReAct(): void {
  heading('ReAct', describeModel());
  const llm = pickLLM([
    step('3 ** 5', 'I should compute 3 to the power of 5.'),
    'The result is 243.', // not JSON: the agent asks the model to follow the format
    answer('3 ** 5 = 243'),
  ]);
  const agent = new ReAct({ llm, actions: [calculator], language: 'en' });
  const reply = agent.call('Use the calculator: what is 3 ** 5?');
  console.log(`answer: ${conclusionOf(reply)}`);
  console.log(`stateDict keys: ${Object.keys(agent.stateDict()).join(', ')}`);
  for (const message of agent.selectAgent.memory!.getMemory()) {
    console.log(`* ${message.sender}: ${String(message.content).replace(/\n/g, '\n    ')}`);
  }
}

async function asyncReAct(): Promise<void> {
  heading('AsyncReAct: two sessions at once, and a loop bounded by maxTurn');
  const slowCalculator = asyncTool({
    name: 'Calculator',
    description: 'Evaluates an arithmetic expression such as (3 + 4) ** 2',
    parameters: z.object({ expression: z.string().describe('The expression to evaluate') }),
    run: async ({ expression }) => {
      await new Promise((resolve) => setTimeout(resolve, 10));
      return evaluate(expression);
    },
  });
  const llm = pickAsyncLLM((messages) => {
    const last = String(messages.at(-1)?.content ?? '');
    const question = /what is (.+)\?$/.exec(last)?.[1];
    return question ? step(question, `Compute ${question}.`) : answer(last);
  });
  const agent = new AsyncReAct({ llm, actions: [slowCalculator], language: 'en' });
  const questions = ['Use the calculator: what is 2 ** 10?', 'Use the calculator: what is 6 * 7?'];
  const replies = await Promise.all(questions.map((q, sessionId) => agent.call(q, { sessionId })));
  for (const [i, reply] of replies.entries()) console.log(`session ${i}: ${conclusionOf(reply)}`);

  const stubborn = new AsyncReAct({
    llm: pickAsyncLLM(() => step('1 + 1', 'Let me check once more.')),
    actions: [slowCalculator],
    maxTurn: 2,
    language: 'en',
  });
  const stopped = await stubborn.call('Use the calculator: what is 1 + 1? Check it twice.');
  console.log(`bounded: ${stopped.content.replace(/\n/g, ' ')}`);
}

export async function main(): Promise<void> {
  syncReAct();
  await asyncReAct();
}

if (isMain(import.meta.url)) await main();
