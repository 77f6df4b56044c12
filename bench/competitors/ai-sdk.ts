import { generateText, type LanguageModel, type ModelMessage } from 'ai';
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
