/**
 * Native function calling: the model calls tools through the OpenAI tools API, the agent runs them (in
 * parallel for async tools) and sends the results back until the model answers. The loop itself is the
 * 15 lines of `main` below the scripted mock; on a real endpoint (OPENAI_API_KEY / OPENAI_BASE_URL) the
 * model decides the calls.
 */
import {
  type ActionReturn,
  type AgentMessage,
  AsyncFunctionCallingAgent,
  hasToolCalls,
  tool,
} from 'lagent-ts';
import { z } from 'zod';
import { describeModel, pickAsyncLLM } from './shared/model';
import { heading, isMain } from './shared/print';

/** What the mock model does: ask for both tools at once, then answer from their results. */
const script = [
  {
    toolCalls: [
      { name: 'Weather', arguments: { city: 'Paris' } },
      { name: 'Convert', arguments: { celsius: 21 } },
    ],
  },
  'It is sunny in Paris, 21 °C (69.8 °F).',
];

export async function main(): Promise<void> {
  heading('Function calling: two tools, one loop', describeModel());
  const weather = tool({
    name: 'Weather',
    description: 'Current weather of a city',
    parameters: z.object({ city: z.string() }),
    run: ({ city }) => `Sunny in ${city}, 21 °C`,
  });
  const convert = tool({
    name: 'Convert',
    description: 'Celsius to Fahrenheit',
    parameters: z.object({ celsius: z.number() }),
    run: ({ celsius }) => `${(celsius * 9) / 5 + 32} °F`,
  });
  const agent = new AsyncFunctionCallingAgent({ llm: pickAsyncLLM(script), actions: [weather, convert] });
  const reply = await agent.call("What's the weather in Paris, in Fahrenheit too?");
  console.log(`answer: ${reply.content}`);
  for (const message of agent.agent.memory!.getMemory()) console.log(`  ${describe(message)}`);
}

/** One line per turn of the tool loop, as the model saw it. */
function describe(message: AgentMessage): string {
  if (Array.isArray(message.content)) {
    return `[${message.sender}] ${message.content.map((result: ActionReturn) => result.toText()).join(' | ')}`;
  }
  if (hasToolCalls(message)) {
    const calls = message.formatted.toolCalls.map(
      (call) => `${call.name}(${JSON.stringify(call.arguments)})`,
    );
    return `[${message.sender}] calls ${calls.join(', ')}`;
  }
  return `[${message.sender}] ${String(message.content)}`;
}

if (isMain(import.meta.url)) await main();
