import type { AISDKLanguageModel } from 'lagent-ts';
import type { AISDKCallOptions, AISDKGenerateResult, AISDKStreamPart } from '#src/llms/ai-sdk-types';

/** One scripted answer of {@link scriptedModel}: text, tool calls and usage. */
export interface ScriptedAnswer {
  text?: string;
  toolCalls?: { id: string; name: string; input: Record<string, unknown> }[];
  usage?: { input: number; output: number };
}

/**
 * An in-process AI SDK language model (no HTTP) answering from a script, in the shape of specification `v2`
 * (flat usage, string finish reasons) or `v4`. It records the call options it received.
 */
export function scriptedModel(
  answers: ScriptedAnswer[] | ((options: AISDKCallOptions) => ScriptedAnswer),
  version: 'v2' | 'v4' = 'v4',
): AISDKLanguageModel & { calls: AISDKCallOptions[] } {
  const calls: AISDKCallOptions[] = [];
  let next = 0;
  const answer = (options: AISDKCallOptions): ScriptedAnswer => {
    calls.push(options);
    if (typeof answers === 'function') return answers(options);
    const scripted = answers[next++];
    if (scripted === undefined) throw new Error('the script has no more answers');
    return scripted;
  };
  const usageOf = (scripted: ScriptedAnswer) => {
    const input = scripted.usage?.input;
    const output = scripted.usage?.output;
    return version === 'v2'
      ? { inputTokens: input, outputTokens: output, totalTokens: undefined }
      : {
          inputTokens: { total: input, noCache: undefined, cacheRead: undefined, cacheWrite: undefined },
          outputTokens: { total: output, text: undefined, reasoning: undefined },
        };
  };
  const finishOf = (scripted: ScriptedAnswer) => {
    const reason = scripted.toolCalls?.length ? 'tool-calls' : 'stop';
    return version === 'v2' ? reason : { unified: reason, raw: undefined };
  };
  return {
    specificationVersion: version,
    provider: 'scripted',
    modelId: 'scripted-model',
    calls,
    doGenerate(options: AISDKCallOptions): Promise<AISDKGenerateResult> {
      const scripted = answer(options);
      const content: Record<string, unknown>[] = [];
      if (scripted.text) content.push({ type: 'text', text: scripted.text });
      for (const call of scripted.toolCalls ?? []) {
        content.push({
          type: 'tool-call',
          toolCallId: call.id,
          toolName: call.name,
          input: JSON.stringify(call.input),
        });
      }
      return Promise.resolve({
        content: content as never,
        finishReason: finishOf(scripted),
        usage: usageOf(scripted),
      });
    },
    doStream(options: AISDKCallOptions) {
      const scripted = answer(options);
      const parts: AISDKStreamPart[] = [{ type: 'stream-start', warnings: [] } as AISDKStreamPart];
      const text = scripted.text ?? '';
      for (let start = 0; start < text.length; start += 3) {
        parts.push({ type: 'text-delta', id: '0', delta: text.slice(start, start + 3) } as AISDKStreamPart);
      }
      for (const call of scripted.toolCalls ?? []) {
        parts.push({
          type: 'tool-call',
          toolCallId: call.id,
          toolName: call.name,
          input: JSON.stringify(call.input),
        } as AISDKStreamPart);
      }
      parts.push({
        type: 'finish',
        usage: usageOf(scripted),
        finishReason: finishOf(scripted),
      } as AISDKStreamPart);
      return Promise.resolve({
        stream: new ReadableStream<AISDKStreamPart>({
          start(controller) {
            for (const part of parts) controller.enqueue(part);
            controller.close();
          },
        }),
      });
    },
  };
}
