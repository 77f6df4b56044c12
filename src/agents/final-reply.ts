import { AgentMessage } from '../schema/agent-message';
import { isAsyncIterator, isIterator, isThenable } from '../utils/is';

/**
 * The final reply of an agent call, whatever the agent's kind: a sync agent's message, an async agent's
 * awaited message, or a streaming agent's last message (the stream's return value when it has one, else its
 * last chunk); `onChunk` sees each message a stream yields. A sync stream is pulled without yielding to the
 * event loop, so nothing else runs on its session meanwhile. Undefined when a stream gave nothing.
 */
export async function finalReply(result: unknown, onChunk?: (chunk: unknown) => void): Promise<unknown> {
  const value = isThenable(result) ? await result : result;
  if (isAsyncIterator(value)) {
    let last: unknown;
    for (;;) {
      const step = await value.next();
      if (step.done) return step.value ?? last;
      last = step.value;
      onChunk?.(last);
    }
  }
  if (isIterator(value) && !(value instanceof AgentMessage)) {
    let last: unknown;
    for (;;) {
      const step = (value as Iterator<unknown>).next();
      if (step.done) return step.value ?? last;
      last = step.value;
      onChunk?.(last);
    }
  }
  return value;
}
