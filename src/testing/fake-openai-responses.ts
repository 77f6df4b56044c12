import { dataURLType, fakeSignature, IMAGE_TYPES, strictSchemaProblem } from './fake-checks';
import { countTokens } from './fake-server';

/*
 * The `/v1/responses` endpoint of the fake OpenAI server: OpenAI's Responses API as its documentation shows it.
 * Replies are `output` items (`reasoning`, `message`, `function_call`), streams the `response.*` events. Like the
 * real API with `store: false`, it hands out reasoning items with encrypted content (when the request asks with
 * `include: ['reasoning.encrypted_content']`) and refuses a later request whose input carries a function call
 * without the reasoning item that came with it, or a reasoning item whose encrypted content it did not issue.
 */

/** What the fake issued so far: which reasoning item came with each function call. */
export interface ResponsesMemory {
  /** call_id -> the id of the reasoning item of the same response. */
  reasoningOfCall: Map<string, string>;
  items: number;
}

/** A fresh {@link ResponsesMemory}. */
export function responsesMemory(): ResponsesMemory {
  return { reasoningOfCall: new Map(), items: 0 };
}

/** One scripted reply, in the terms the Responses endpoint needs. */
export interface ResponsesReply {
  content: string;
  reasoning: string | undefined;
  toolCalls: { id: string; name: string; arguments: string }[];
  usage: {
    prompt_tokens: number;
    completion_tokens: number;
    cached_tokens?: number | undefined;
    reasoning_tokens?: number | undefined;
  };
  chunkSize: number;
  /** `incomplete` (cut at max_output_tokens) instead of `completed`. */
  incomplete: boolean;
}

function isRecord(value: unknown): value is Record<string, any> {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

/** Why the real API would refuse this request body (a 400), or undefined. */
export function responsesRequestProblem(body: unknown, memory: ResponsesMemory): string | undefined {
  if (!isRecord(body)) return 'the body must be a JSON object';
  if (typeof body.model !== 'string') return "Missing required parameter: 'model'.";
  const input = body.input;
  if (typeof input !== 'string' && !Array.isArray(input)) return "Missing required parameter: 'input'.";
  const format = body.text?.format;
  if (format?.type === 'json_schema' && format.strict === true) {
    const problem = strictSchemaProblem(format.schema);
    if (problem !== undefined) return `Invalid schema for response_format '${format.name}': ${problem}`;
  }
  if (!Array.isArray(input)) return undefined;
  const seenReasoning = new Set<string>();
  const seenCalls = new Set<string>();
  for (const [index, item] of input.entries()) {
    if (!isRecord(item)) return `Invalid type for 'input[${index}]': expected an object.`;
    if (item.type === 'reasoning') {
      if (typeof item.id !== 'string') return `Missing required parameter: 'input[${index}].id'.`;
      if (body.store === false) {
        if (item.encrypted_content === undefined) {
          return `Item with id '${item.id}' not found. Items are not persisted when \`store\` is set to false. Try again with \`store\` set to true, or remove this item from your input.`;
        }
        if (item.encrypted_content !== fakeSignature('reasoning', item.id)) {
          return `The encrypted content for item ${item.id} could not be verified.`;
        }
      }
      seenReasoning.add(item.id);
    } else if (item.type === 'function_call') {
      const reasoning = memory.reasoningOfCall.get(item.call_id);
      if (reasoning !== undefined && !seenReasoning.has(reasoning)) {
        return `Item '${item.id ?? item.call_id}' of type 'function_call' was provided without its required 'reasoning' item: '${reasoning}'.`;
      }
      seenCalls.add(item.call_id);
    } else if (item.type === 'function_call_output') {
      if (!seenCalls.has(item.call_id)) {
        return `No tool call found for function call output with call_id ${item.call_id}.`;
      }
    } else if (item.type === undefined || item.type === 'message') {
      const content = item.content;
      if (!Array.isArray(content)) continue;
      for (const [position, part] of content.entries()) {
        const at = `input[${index}].content[${position}]`;
        if (part?.type === 'input_image') {
          const url = part.image_url;
          const type = dataURLType(url);
          if (!(typeof url === 'string' && /^https?:\/\//.test(url)) && !(type && IMAGE_TYPES.has(type))) {
            return `Invalid '${at}.image_url'. Expected a base64-encoded data URL with an image MIME type or an http(s) URL.`;
          }
        } else if (part?.type === 'input_file') {
          if (part.file_url === undefined && dataURLType(part.file_data) === undefined) {
            return `Invalid '${at}': a file needs file_data (a base64 data: URL), file_url or file_id.`;
          }
          if (part.file_data !== undefined && typeof part.filename !== 'string') {
            return `Missing required parameter: '${at}.filename'.`;
          }
        } else if (part?.type !== 'input_text' && part?.type !== 'output_text') {
          return `Invalid value: '${part?.type}'. Supported values are: 'input_text', 'input_image', 'input_file', 'output_text'.`;
        }
      }
    }
  }
  return undefined;
}

/** The reply as a finished response object, and the ids it issued remembered. */
export function responseObject(
  body: Record<string, any>,
  reply: ResponsesReply,
  id: string,
  memory: ResponsesMemory,
): Record<string, unknown> {
  const output: Record<string, unknown>[] = [];
  const model = String(body.model ?? 'fake-model');
  let reasoningId: string | undefined;
  if (reply.reasoning !== undefined) {
    reasoningId = `rs_fake_${++memory.items}`;
    output.push(reasoningItem(body, reasoningId, reply.reasoning));
  }
  if (reply.content !== '') {
    output.push({
      id: `msg_fake_${++memory.items}`,
      type: 'message',
      status: 'completed',
      role: 'assistant',
      content: [{ type: 'output_text', text: reply.content, annotations: [], logprobs: [] }],
    });
  }
  for (const call of reply.toolCalls) {
    if (reasoningId !== undefined) memory.reasoningOfCall.set(call.id, reasoningId);
    output.push({
      id: `fc_fake_${++memory.items}`,
      type: 'function_call',
      status: 'completed',
      arguments: call.arguments,
      call_id: call.id,
      name: call.name,
    });
  }
  const usage = reply.usage;
  return {
    id,
    object: 'response',
    created_at: Math.floor(Date.now() / 1000),
    status: reply.incomplete ? 'incomplete' : 'completed',
    incomplete_details: reply.incomplete ? { reason: 'max_output_tokens' } : null,
    error: null,
    model,
    output,
    store: body.store ?? true,
    usage: {
      input_tokens: usage.prompt_tokens,
      input_tokens_details: { cached_tokens: usage.cached_tokens ?? 0 },
      output_tokens: usage.completion_tokens,
      output_tokens_details: { reasoning_tokens: usage.reasoning_tokens ?? 0 },
      total_tokens: usage.prompt_tokens + usage.completion_tokens,
    },
  };
}

function reasoningItem(body: Record<string, any>, id: string, text: string): Record<string, unknown> {
  const item: Record<string, unknown> = {
    id,
    type: 'reasoning',
    summary: body.reasoning?.summary === undefined ? [] : [{ type: 'summary_text', text }],
  };
  const include: unknown = body.include;
  if (Array.isArray(include) && include.includes('reasoning.encrypted_content')) {
    item.encrypted_content = fakeSignature('reasoning', id);
  }
  return item;
}

/** The events of a streamed response, as the API sends them (each with its `sequence_number`). */
export function responseEvents(
  body: Record<string, any>,
  reply: ResponsesReply,
  id: string,
  memory: ResponsesMemory,
): Record<string, unknown>[] {
  const final = responseObject(body, reply, id, memory);
  const events: Record<string, unknown>[] = [];
  const push = (event: Record<string, unknown>) => events.push({ ...event, sequence_number: events.length });
  const pending = { ...final, status: 'in_progress', output: [], usage: null };
  push({ type: 'response.created', response: pending });
  push({ type: 'response.in_progress', response: pending });
  const size = Math.max(1, reply.chunkSize);
  const pieces = (text: string) => {
    const result: string[] = [];
    for (let start = 0; start < text.length; start += size) result.push(text.slice(start, start + size));
    return result;
  };
  for (const [outputIndex, item] of (final.output as Record<string, any>[]).entries()) {
    if (item.type === 'reasoning') {
      push({ type: 'response.output_item.added', output_index: outputIndex, item: { ...item, summary: [] } });
      for (const [summaryIndex, summary] of (item.summary as { text: string }[]).entries()) {
        const base = { item_id: item.id, output_index: outputIndex, summary_index: summaryIndex };
        push({
          type: 'response.reasoning_summary_part.added',
          ...base,
          part: { type: 'summary_text', text: '' },
        });
        for (const delta of pieces(summary.text)) {
          push({ type: 'response.reasoning_summary_text.delta', ...base, delta });
        }
        push({ type: 'response.reasoning_summary_text.done', ...base, text: summary.text });
        push({
          type: 'response.reasoning_summary_part.done',
          ...base,
          part: { type: 'summary_text', text: summary.text },
        });
      }
      push({ type: 'response.output_item.done', output_index: outputIndex, item });
    } else if (item.type === 'message') {
      const text = item.content[0].text as string;
      push({
        type: 'response.output_item.added',
        output_index: outputIndex,
        item: { ...item, status: 'in_progress', content: [] },
      });
      const base = { item_id: item.id, output_index: outputIndex, content_index: 0 };
      push({
        type: 'response.content_part.added',
        ...base,
        part: { type: 'output_text', text: '', annotations: [] },
      });
      for (const delta of pieces(text))
        push({ type: 'response.output_text.delta', ...base, delta, logprobs: [] });
      push({ type: 'response.output_text.done', ...base, text, logprobs: [] });
      push({ type: 'response.content_part.done', ...base, part: item.content[0] });
      push({ type: 'response.output_item.done', output_index: outputIndex, item });
    } else {
      push({
        type: 'response.output_item.added',
        output_index: outputIndex,
        item: { ...item, status: 'in_progress', arguments: '' },
      });
      for (const delta of pieces(item.arguments)) {
        push({
          type: 'response.function_call_arguments.delta',
          item_id: item.id,
          output_index: outputIndex,
          delta,
        });
      }
      push({
        type: 'response.function_call_arguments.done',
        item_id: item.id,
        output_index: outputIndex,
        arguments: item.arguments,
      });
      push({ type: 'response.output_item.done', output_index: outputIndex, item });
    }
  }
  push({ type: reply.incomplete ? 'response.incomplete' : 'response.completed', response: final });
  return events;
}

/** The prompt tokens of a Responses request, about one token per 4 characters. */
export function responsesPromptTokens(body: Record<string, any>): number {
  return countTokens({ instructions: body.instructions, input: body.input, tools: body.tools });
}
