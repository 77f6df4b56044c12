import { AgentMessage, type MessageInput } from '../schema/agent-message';
import { isPlainObject } from '../utils/is';
import { messageOf } from './errors';
import { rawMember } from './json-member';

/** The fields an eval line's question is read from, the first one present wins. */
export const INPUT_FIELDS = ['input', 'question', 'prompt', 'message'] as const;
/** The fields an eval line's expected answer is read from, the first one present wins. */
export const EXPECTED_FIELDS = ['expected', 'answer', 'target'] as const;

/** One line of an eval data file, ready to run. */
export interface EvalItem {
  /** The line's number in the file (from 1). */
  line: number;
  /** The key the item is known by in the results: its id's JSON text, or `line N` when it has no id. */
  key: string;
  /** The `id` as written (its JSON text), when the line has one. */
  id?: string | undefined;
  /** What goes to the agent. */
  message: MessageInput | MessageInput[];
  /** The question as written in the line, for the results file. */
  input: unknown;
  /** The expected answer as written in the line. */
  expected: unknown;
  /** The whole parsed line (what a scorer module receives). */
  record: Record<string, unknown>;
}

/** A line that cannot run, with the reason. */
export interface InvalidItem {
  line: number;
  key: string;
  id?: string | undefined;
  error: string;
  /** The line as it was (cut at 1000 characters). */
  text: string;
}

/** The key of an item without an id: its line number. */
export function lineKey(line: number): string {
  return `line ${line}`;
}

function readMessage(value: unknown): MessageInput {
  if (typeof value === 'string') return value;
  if (isPlainObject(value)) return AgentMessage.from(value);
  throw new Error(`the question must be a string, a message object or a list of them, got ${typeof value}`);
}

/** The id of a line as its JSON text (a number keeps its digits as written). */
function idText(record: Record<string, unknown>, text: string): string | undefined {
  const { id } = record;
  if (typeof id === 'string') return JSON.stringify(id);
  if (typeof id === 'number') return rawMember(text, 'id');
  return undefined;
}

/** Parses one line of an eval data file. */
export function readEvalLine(text: string, line: number): EvalItem | InvalidItem {
  const cut = text.length > 1000 ? `${text.slice(0, 1000)}...` : text;
  let record: unknown;
  try {
    record = JSON.parse(text);
  } catch (error) {
    return { line, key: lineKey(line), error: `malformed JSON: ${messageOf(error)}`, text: cut };
  }
  if (!isPlainObject(record)) {
    return { line, key: lineKey(line), error: 'a line must be a JSON object', text: cut };
  }
  const id = idText(record, text);
  const key = id ?? lineKey(line);
  const invalid = (error: string): InvalidItem => ({
    line,
    key,
    ...(id === undefined ? {} : { id }),
    error,
    text: cut,
  });
  if (record.id !== undefined && id === undefined) return invalid('"id" must be a string or a number');
  const inputField = INPUT_FIELDS.find((name) => record[name] !== undefined);
  if (inputField === undefined) {
    return invalid(
      `the question is missing: give one of ${INPUT_FIELDS.map((name) => `"${name}"`).join(', ')}`,
    );
  }
  const expectedField = EXPECTED_FIELDS.find((name) => record[name] !== undefined);
  if (expectedField === undefined) {
    return invalid(
      `the expected answer is missing: give one of ${EXPECTED_FIELDS.map((name) => `"${name}"`).join(', ')}`,
    );
  }
  const input = record[inputField];
  try {
    const message = Array.isArray(input) ? input.map(readMessage) : readMessage(input);
    if (Array.isArray(message) && message.length === 0) return invalid(`"${inputField}" is an empty list`);
    return {
      line,
      key,
      ...(id === undefined ? {} : { id }),
      message,
      input,
      expected: record[expectedField],
      record,
    };
  } catch (error) {
    return invalid(`"${inputField}": ${messageOf(error)}`);
  }
}

export function isEvalItem(value: EvalItem | InvalidItem): value is EvalItem {
  return !('error' in value);
}
