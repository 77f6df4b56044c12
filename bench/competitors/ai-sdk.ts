import { generateText, isStepCount, type LanguageModel, type ModelMessage, tool } from 'ai';
import { z } from 'zod';
import { wait } from './latency';

/** The current language-model spec version the AI SDK accepts (`specificationVersion: 'v4'`). */
type LanguageModelV4 = Extract<LanguageModel, { specificationVersion: 'v4' }>;
type GenerateResult = Awaited<ReturnType<LanguageModelV4['doGenerate']>>;

/**
 * A scripted AI SDK model: `doGenerate` returns a fixed text after `latencyMs` (no network). Written by
 * hand rather than `MockLanguageModelV4` from `ai/test`, which keeps every call's options in
 * `doGenerateCalls` and so would grow without bound over a benchmark. The result object is built per
 * call, as a provider would.
 */
export function scriptedModel(text: string, latencyMs = 0): LanguageModelV4 {
  return {
    specificationVersion: 'v4',
    provider: 'bench',
    modelId: 'scripted',
    supportedUrls: {},
    async doGenerate(options): Promise<GenerateResult> {
      await wait(latencyMs, options.abortSignal);
      return {
        content: [{ type: 'text', text }],
        finishReason: { unified: 'stop', raw: 'stop' },
        usage: {
          inputTokens: { total: 1, noCache: 1, cacheRead: undefined, cacheWrite: undefined },
          outputTokens: { total: 1, text: 1, reasoning: undefined },
        },
        warnings: [],
      };
    },
    doStream() {
      throw new Error('the scripted bench model does not stream');
    },
  };
}

/**
 * One turn through `generateText`: the system instruction and a messages array built for this call, one
 * model step, text out. Resolves to the text and the conversation a caller keeps for the next turn
 * (the request's messages plus the response's), the equivalent of lagent-ts's memory storing the turn.
 */
export async function aiSdkTurn(
  model: LanguageModelV4,
  instructions: string,
  input: string,
): Promise<{ text: string; history: ModelMessage[] }> {
  const messages: ModelMessage[] = [{ role: 'user', content: input }];
  const result = await generateText({
    model,
    instructions,
    messages,
    maxRetries: 0,
    telemetry: { isEnabled: false },
  });
  return { text: result.text, history: [...messages, ...result.response.messages] };
}

/** The tool call every scripted tool model makes, and the text it answers with once it has the result. */
export const TOOL_CALL = { name: 'Weather', arguments: { city: 'Paris' } } as const;

const USAGE = {
  inputTokens: { total: 1, noCache: 1, cacheRead: undefined, cacheWrite: undefined },
  outputTokens: { total: 1, text: 1, reasoning: undefined },
};

/**
 * A scripted AI SDK model that calls a tool: while the last prompt message is not a tool result, it
 * answers with one `Weather` call (`{"city":"Paris"}`, JSON-encoded as a provider sends it, a new call id
 * each time); after a tool result, with `text`. Built per call, nothing recorded.
 */
export function scriptedToolModel(text: string, latencyMs = 0): LanguageModelV4 {
  let calls = 0;
  const input = JSON.stringify(TOOL_CALL.arguments);
  return {
    specificationVersion: 'v4',
    provider: 'bench',
    modelId: 'scripted-tools',
    supportedUrls: {},
    async doGenerate(options): Promise<GenerateResult> {
      await wait(latencyMs, options.abortSignal);
      if (options.prompt.at(-1)?.role === 'tool') {
        return {
          content: [{ type: 'text', text }],
          finishReason: { unified: 'stop', raw: 'stop' },
          usage: USAGE,
          warnings: [],
        };
      }
      return {
        content: [{ type: 'tool-call', toolCallId: `call_${++calls}`, toolName: TOOL_CALL.name, input }],
        finishReason: { unified: 'tool-calls', raw: 'tool_calls' },
        usage: USAGE,
        warnings: [],
      };
    },
    doStream() {
      throw new Error('the scripted bench model does not stream');
    },
  };
}

/** The `Weather` tool for `generateText`: a zod input schema and a synchronous `execute`. */
export const aiSdkWeather = tool({
  description: 'Current weather of a city',
  inputSchema: z.object({ city: z.string() }),
  execute: ({ city }) => `Sunny in ${city}, 21 °C`,
});

/**
 * One tool turn through `generateText`: the system instruction and a messages array built for this call,
 * the `Weather` tool, and up to 2 steps (model → tool → model), text out. Resolves to the text and the
 * conversation a caller keeps (request messages plus every response message: the tool call, its result
 * and the answer), the equivalent of lagent-ts's memories storing the turn.
 */
export async function aiSdkToolTurn(
  model: LanguageModelV4,
  instructions: string,
  input: string,
): Promise<{ text: string; history: ModelMessage[] }> {
  const messages: ModelMessage[] = [{ role: 'user', content: input }];
  const result = await generateText({
    model,
    instructions,
    messages,
    tools: { Weather: aiSdkWeather },
    stopWhen: isStepCount(2),
    maxRetries: 0,
    telemetry: { isEnabled: false },
  });
  // `responseMessages` holds every step's messages (`response.messages` only the last step's).
  return { text: result.text, history: [...messages, ...result.responseMessages] };
}
