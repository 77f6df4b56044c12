import {
  Agent,
  type AgentInputItem,
  type Model,
  type ModelRequest,
  type ModelResponse,
  Runner,
  setTracingDisabled,
  tool,
  Usage,
} from '@openai/agents-core';
import { z } from 'zod';
import { wait } from './latency';

// No trace processor, no exporter: the benchmark measures the run loop, not tracing.
setTracingDisabled(true);

/**
 * A scripted OpenAI Agents model: `getResponse` returns one completed assistant message with a fixed
 * text after `latencyMs` (no network). Written by hand rather than `ScriptedModel` from
 * `@openai/agents-core/testing`, which consumes a finite script and records every call.
 */
export class ScriptedAgentsModel implements Model {
  constructor(
    readonly text: string,
    readonly latencyMs = 0,
  ) {}

  async getResponse(request: ModelRequest): Promise<ModelResponse> {
    await wait(this.latencyMs, request.signal);
    return {
      usage: new Usage({ requests: 1, inputTokens: 1, outputTokens: 1, totalTokens: 2 }),
      output: [
        {
          type: 'message',
          role: 'assistant',
          status: 'completed',
          content: [{ type: 'output_text', text: this.text }],
        },
      ],
    };
  }

  // biome-ignore lint/correctness/useYield: the scripted model does not stream
  async *getStreamedResponse(): AsyncIterable<never> {
    throw new Error('the scripted bench model does not stream');
  }
}

/** An agent with the system instruction and the scripted model, and a runner with tracing off. */
export function agentsSetup(text: string, instructions: string, latencyMs = 0) {
  const agent = new Agent({ name: 'bench', instructions, model: new ScriptedAgentsModel(text, latencyMs) });
  const runner = new Runner({ tracingDisabled: true });
  return { agent, runner };
}

/**
 * One turn through `run(agent, input)`: one model turn, text out. Resolves to the text and the run's
 * history (input plus new items), which a caller keeps for the next turn.
 */
export async function agentsTurn(
  { agent, runner }: { agent: Agent; runner: Runner },
  input: string,
): Promise<{ text: string; history: AgentInputItem[] }> {
  const result = await runner.run(agent, input);
  return { text: result.finalOutput ?? '', history: result.history };
}

/**
 * A scripted OpenAI Agents model that calls a tool: while the last input item is not a function result, it
 * answers with one `Weather` function call (`{"city":"Paris"}`, JSON-encoded as the API sends it, a new
 * call id each time); after a function result, with one assistant message of `text`.
 */
export class ScriptedToolAgentsModel implements Model {
  #calls = 0;
  readonly #arguments = JSON.stringify({ city: 'Paris' });

  constructor(
    readonly text: string,
    readonly latencyMs = 0,
  ) {}

  async getResponse(request: ModelRequest): Promise<ModelResponse> {
    await wait(this.latencyMs, request.signal);
    const { input } = request;
    const last = typeof input === 'string' ? undefined : input.at(-1);
    const usage = new Usage({ requests: 1, inputTokens: 1, outputTokens: 1, totalTokens: 2 });
    if (last?.type === 'function_call_result') {
      return {
        usage,
        output: [
          {
            type: 'message',
            role: 'assistant',
            status: 'completed',
            content: [{ type: 'output_text', text: this.text }],
          },
        ],
      };
    }
    return {
      usage,
      output: [
        {
          type: 'function_call',
          callId: `call_${++this.#calls}`,
          name: 'Weather',
          status: 'completed',
          arguments: this.#arguments,
        },
      ],
    };
  }

  // biome-ignore lint/correctness/useYield: the scripted model does not stream
  async *getStreamedResponse(): AsyncIterable<never> {
    throw new Error('the scripted bench model does not stream');
  }
}

/** The `Weather` tool for `run`: zod parameters and a synchronous `execute`. */
export const agentsWeather = tool({
  name: 'Weather',
  description: 'Current weather of a city',
  parameters: z.object({ city: z.string() }),
  execute: ({ city }) => `Sunny in ${city}, 21 °C`,
});

/** An agent with the system instruction, the `Weather` tool and the scripted tool model; tracing off. */
export function agentsToolSetup(text: string, instructions: string, latencyMs = 0) {
  const agent = new Agent({
    name: 'bench',
    instructions,
    model: new ScriptedToolAgentsModel(text, latencyMs),
    tools: [agentsWeather],
  });
  const runner = new Runner({ tracingDisabled: true });
  return { agent, runner };
}
