import { ConfigurationError } from '../schema/errors';

/*
 * `extraBody`, the client's option and the call's: fields added to a model request for what the client has no
 * option of its own (`seed`, `top_k` on servers that take it, `metadata`, ...). It adds, it never replaces what
 * the client builds itself: a call's options come from code that may pass on what it was given, and a request
 * whose model, messages or tools came from there would no longer be the one its owner configured.
 */

/** Request fields the client writes itself, and the option that sets each. */
const OWN_FIELDS: Readonly<Record<string, string>> = {
  model: "the client's `model` option",
  messages: 'the messages of the call',
  prompt: 'the messages of the call',
  system: "the messages of the call (a system message, or the agent's template)",
  tools: 'the `tools` of the agent or the call',
  tool_choice: 'the call’s `toolChoice`',
  parallel_tool_calls: 'the call’s `parallelToolCalls`',
  stream: 'chat() or streamChat()',
  stream_options: "streamChat() (and the client's `streamUsage`)",
};

/**
 * Throws a {@link ConfigurationError} when `extraBody` names a field the client writes itself (the model, the
 * messages, prompt or system prompt, tools and tool choice, streaming), saying what sets it.
 */
export function checkExtraBody(
  owner: string,
  extraBody: Readonly<Record<string, unknown>> | undefined,
): void {
  if (extraBody === undefined) return;
  if (extraBody === null || typeof extraBody !== 'object' || Array.isArray(extraBody)) {
    throw new ConfigurationError({ message: `${owner}: extraBody must be an object of request fields` });
  }
  for (const key of Object.keys(extraBody)) {
    if (Object.hasOwn(OWN_FIELDS, key)) {
      throw new ConfigurationError({
        message: `${owner}: extraBody cannot set "${key}": the client writes it from ${OWN_FIELDS[key]}`,
      });
    }
  }
}

/** Adds the client's extra fields (checked when it was made) and the call's (checked here) to `body`. */
export function addExtraBody(
  owner: string,
  body: Record<string, unknown>,
  own: Readonly<Record<string, unknown>>,
  call: Readonly<Record<string, unknown>> | undefined,
): void {
  Object.assign(body, own);
  if (call !== undefined) {
    checkExtraBody(owner, call);
    Object.assign(body, call);
  }
}
